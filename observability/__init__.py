"""What Skein tells operators: Prometheus metrics (``metrics``, ``GET /metrics``) and OpenTelemetry
traces of every run (``tracing``). Imports nothing of Skein's domains.
"""
