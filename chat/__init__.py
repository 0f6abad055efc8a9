"""The developers' chat API, one of Skein's surfaces: a message to a workflow and its reply, waited
for (``POST /api/workflows/{id}/chat/``) or streamed as Server-Sent Events (``.../chat/stream/``, the
editor's test chat), and the editor's Run button. Turns themselves are the runs app's.
"""
