"""The people talking to a workflow (docs/participants.md): who they are (named by the caller, or a
widget visitor, signed by the embedding site), the memory kept under them, and forgetting them.

Modules: ``models``, ``services`` (naming, signed identities, forgetting), ``selectors``, ``api``.
"""
