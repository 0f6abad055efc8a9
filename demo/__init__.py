"""The demo that ``make run`` starts with: an account, its local provider, the demo workflows with
their conversation tests (``manage.py skein_bootstrap``).
"""
