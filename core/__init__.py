"""What every app of Skein uses and no domain owns: text and JSON bounds, encryption at rest, the
runtime mode's backends, client addresses, origins, the API's error shape and shared fields,
the WebSocket basics."""
