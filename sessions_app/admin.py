from django.contrib import admin

from sessions_app.models import (
    Activity,
    Comment,
    Entry,
    Job,
    Session,
    SessionShare,
    ShareLink,
    Team,
    TeamMembership,
)


class TeamMembershipInline(admin.TabularInline):
    model = TeamMembership
    extra = 1


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at")
    inlines = [TeamMembershipInline]


class SessionShareInline(admin.TabularInline):
    model = SessionShare
    extra = 0


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ("pi_id", "name", "owner", "source", "entry_count", "modified_at")
    list_filter = ("source",)
    search_fields = ("pi_id", "name", "cwd", "first_message")
    raw_id_fields = ("leaf", "parent", "owner")
    inlines = [SessionShareInline]


@admin.register(Entry)
class EntryAdmin(admin.ModelAdmin):
    list_display = ("pi_id", "session", "type", "role", "tool_name", "label", "preview")
    list_filter = ("type", "role")
    search_fields = ("pi_id", "preview", "label")
    raw_id_fields = ("session", "parent")


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "session", "kind", "status", "attempts", "created_at", "finished_at")
    list_filter = ("kind", "status")
    raw_id_fields = ("session", "result_entry")


admin.site.register(Comment)
admin.site.register(ShareLink)
admin.site.register(Activity)
