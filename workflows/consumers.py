"""WebSocket consumers: a thread's events, for its owner only."""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from . import events, selectors


class ThreadConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        user = self.scope.get("user")
        thread_id = self.scope["url_route"]["kwargs"]["thread_id"]
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        thread = await database_sync_to_async(selectors.thread_get)(owner=user, thread_id=thread_id)
        if thread is None:
            await self.close(code=4404)
            return
        self.group = events.thread_group(thread_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def skein_event(self, message):
        await self.send_json(message["event"])
