"""Skein's workflow engine: pure Python, no ORM.

``graph`` parses React Flow's JSON, ``registry`` holds the node types (the built-in ones are
``workflows.nodes``, registered by the workflows app), ``validation`` reports every problem keyed by
node and field, and ``executor`` runs a graph against a ``RunServices`` implementation supplied by
the Django side (``runs.runtime``), giving each node a ``context.NodeContext``.
"""
