"""Writes of providers: store, change (a stored key never follows a new server unless typed again),
delete."""

from __future__ import annotations

from providers.models import Provider


class KeyNeededAgain(Exception):
    """A stored key would go somewhere its owner did not send it."""


# --- providers ----------------------------------------------------------------------------------
def provider_create(*, owner, name: str, kind: str, api_base: str = "", api_key: str = "") -> Provider:
    provider = Provider(owner=owner, name=name, kind=kind, api_base=api_base or "")
    provider.api_key = api_key or ""
    provider.save()
    return provider


def provider_update(*, provider: Provider, **fields) -> Provider:
    """Change a provider. Moving a stored key (a new ``api_base`` or ``kind``) needs the key again
    in the same change (``api_key``; an empty one removes it): ``KeyNeededAgain`` otherwise."""
    moves = any(name in fields and (fields[name] or "") != getattr(provider, name) for name in ("kind", "api_base"))
    if moves and provider.has_api_key and fields.get("api_key") is None:
        raise KeyNeededAgain(
            "changing the server or the kind of a provider with a stored key needs the key again "
            "(send api_key; an empty one removes the stored key)"
        )
    for name in ("name", "kind", "api_base"):
        if name in fields:
            setattr(provider, name, fields[name] or "")
    if "api_key" in fields and fields["api_key"] is not None:
        provider.api_key = fields["api_key"]
    provider.save()
    return provider


def provider_delete(*, provider: Provider) -> None:
    """Delete a provider (and its stored key); the graphs that name it report it missing."""
    provider.delete()
