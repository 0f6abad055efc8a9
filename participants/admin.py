from django.contrib import admin

from participants.models import Participant


@admin.register(Participant)
class ParticipantAdmin(admin.ModelAdmin):
    list_display = ("id", "owner", "external_id", "created", "last_seen")
    search_fields = ("external_id",)
