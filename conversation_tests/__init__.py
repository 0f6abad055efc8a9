"""Conversation tests, one of Skein's surfaces (docs/conversation-tests.md): scripted multi-turn
chats with checks, run on Celery against a draft or a version, and the publish gate that runs them
before a version goes live.

Modules: ``models``, ``checks`` (what a turn may expect), ``execution`` (a test run on the
workers), ``judge`` (a model grading a reply), ``services``, ``selectors``, ``api``, ``files``
(import and export), ``report`` (JUnit), ``consumers`` (a test run's live progress).
"""
