"""Webhooks and schedules, one of Skein's surfaces: publishing syncs them (``signals``), a webhook's
secret URL and a schedule's beat tick start runs (``services``), ``beat`` is the scheduler with
its heartbeat, ``api`` the webhook endpoint.
"""
