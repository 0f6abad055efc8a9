"""The runs app's HTTP API: runs and their traces, threads and their transcripts, a thread's memory
as its models would see it next, a workflow's spend limits, and the deferred waits (``deferred``)
that let a chat request wait for its turn without holding a thread.
"""
