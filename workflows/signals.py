"""What the workflows app tells the apps above it, which connect to these in their app config:
the workflows app imports none of them."""

from django.dispatch import Signal

# Sent inside the transaction that publishes a version (``workflow``, ``version``): a receiver that
# fails undoes the publish. The triggers app makes its webhooks and schedules match the version.
version_published = Signal()

# Asked when the editor opens a workflow (``workflow``, ``base_url``): each receiver answers the
# published version's entry points it serves, as ``[{node, type, ...}]`` (the triggers app: webhook
# URLs and schedules' next runs).
triggers_listed = Signal()
