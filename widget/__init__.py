"""The embeddable chat widget, one of Skein's surfaces: a workflow's public key, its visitors, their
threads (``selectors``, ``services``), per-visitor rate limits (``ratelimits``), the widget's
settings and script (``api``) and its WebSocket (``consumers``).
"""
