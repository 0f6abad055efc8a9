"""Skein's workflow engine: pure Python, no ORM.

``graph`` parses React Flow's JSON, ``registry`` holds the node types, ``validation`` reports every
problem keyed by node and field, and ``executor`` runs a graph against a ``RunServices``
implementation supplied by the Django side (``workflows.runtime``).
"""
