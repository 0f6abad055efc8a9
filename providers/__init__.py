"""Model providers and every call of a model: stored providers with their keys encrypted at rest,
``llm`` (the one place a model is called, through litellm), ``catalog`` (what a provider serves and
the model a new node gets), ``diagnosis`` (a provider's connection check), ``local_model`` (the
bundled offline model), ``netguard`` (the address guard every outbound request goes through).
"""
