"""Conversations and their turns: threads and their transcripts, runs and their steps, the turn
from its lock to its last event, and waiting for it.

Modules: ``models``; ``services`` (creating runs), ``threads`` (thread writes), ``turns`` (a turn
executed, its outcome recorded), ``runtime`` (what the engine is given for one run), ``locks``,
``waiting``, ``events`` (the one module that sends events to clients), ``streams`` (a streamed
turn), ``limits`` (daily spend limits), ``tasks``; ``selectors``; ``api/`` (runs, threads, a
thread's memory, limits, and the deferred waits of the chat surfaces), ``consumers``.
"""
