"""URL map of the app: every route in one list, grouped by area (the views live in
views/<area>.py)."""

from django.urls import path

from sessions_app.views import (
    activity,
    alternatives,
    changes,
    chat,
    comments,
    compare,
    exports,
    jobs,
    manage,
    models,
    pages,
    preferences,
    prompt_templates,
    review_queues,
    scores,
    search,
    sharing,
    sync,
    sync_api,
    teams,
    tree,
    usage,
    users,
    workspace,
)

app_name = "sessions_app"

urlpatterns = [
    # --- sessions list and session page
    path("", pages.session_list, name="session_list"),
    path("sessions/table/", pages.session_table, name="session_table"),
    path("import/", pages.import_session, name="session_import"),
    path("import/<uuid:job_id>/", pages.import_status, name="import_status"),
    path("new/", pages.new_session, name="session_new"),
    path("s/<str:session_id>/", pages.session_detail, name="session_detail"),
    path("s/<str:session_id>/stats/", pages.session_stats, name="session_stats"),
    path("s/<str:session_id>/rename/", manage.rename, name="session_rename"),
    path("s/<str:session_id>/pin/", manage.pin, name="session_pin"),
    path("s/<str:session_id>/archive/", manage.archive, name="session_archive"),
    path("s/<str:session_id>/tags/", manage.tags, name="session_tags"),
    path("s/<str:session_id>/delete/", manage.delete, name="session_delete"),
    path("s/<str:session_id>/provenance/", pages.provenance_panel, name="session_provenance"),
    # --- review features: comments, activity, sharing and links, exports, compare, search, teams
    path("s/<str:session_id>/review/", comments.review_list, name="review_list"),
    path("s/<str:session_id>/review/comments/", comments.entry_comments, name="review_comments"),
    path(
        "s/<str:session_id>/review/comments/add/", comments.add_comment, name="review_comment_add"
    ),
    path(
        "s/<str:session_id>/review/comments/<int:comment_id>/resolve/",
        comments.resolve_comment,
        name="review_comment_resolve",
    ),
    path(
        "s/<str:session_id>/review/comments/<int:comment_id>/reopen/",
        comments.reopen_comment,
        name="review_comment_reopen",
    ),
    path(
        "s/<str:session_id>/review/counts.json",
        comments.comment_counts,
        name="review_comment_counts",
    ),
    path("s/<str:session_id>/activity/", activity.activity, name="activity"),
    path("s/<str:session_id>/sharing/", sharing.sharing_page, name="sharing"),
    path("s/<str:session_id>/sharing/team/", sharing.share_team, name="sharing_team"),
    path(
        "s/<str:session_id>/sharing/team/<int:share_id>/revoke/",
        sharing.unshare_team,
        name="sharing_team_revoke",
    ),
    path("s/<str:session_id>/sharing/link/", sharing.create_link, name="sharing_link"),
    path(
        "s/<str:session_id>/sharing/link/<int:link_id>/revoke/",
        sharing.revoke_link,
        name="sharing_link_revoke",
    ),
    path("s/<str:session_id>/export/<str:fmt>/", exports.export, name="export"),
    path("s/<str:session_id>/compare/", compare.compare, name="compare"),
    path("s/<str:session_id>/alternatives/", alternatives.page, name="alternatives"),
    path(
        "s/<str:session_id>/alternatives/columns/",
        alternatives.columns,
        name="alternatives_columns",
    ),
    path("s/<str:session_id>/alternatives/start/", alternatives.start, name="alternatives_start"),
    path("s/<str:session_id>/alternatives/stop/", alternatives.stop_all, name="alternatives_stop"),
    path("s/<str:session_id>/alternatives/keep/", alternatives.keep, name="alternatives_keep"),
    path("s/<str:session_id>/compare/summary/", compare.compare_summary, name="compare_summary"),
    path(
        "s/<str:session_id>/compare/summary/<uuid:job_id>/", compare.compare_job, name="compare_job"
    ),
    path("l/<str:token>/", sharing.share_link, name="share_link"),
    path("l/<str:token>/export/<str:fmt>/", sharing.share_link_export, name="share_link_export"),
    path("search/", search.search, name="search"),
    path("teams/", sharing.teams, name="teams"),
    path("teams/new/", teams.create, name="team_create"),
    path("teams/<int:team_id>/invite/", teams.invite, name="team_invite"),
    path("teams/<int:team_id>/members/<int:member_id>/role/", teams.set_role, name="team_role"),
    path("teams/<int:team_id>/members/<int:member_id>/remove/", teams.remove, name="team_remove"),
    path("teams/<int:team_id>/leave/", teams.leave, name="team_leave"),
    # --- scores and review queues (docs/scores.md)
    path("teams/<int:team_id>/queues/", review_queues.queues, name="queues"),
    path("teams/<int:team_id>/queues/new/", review_queues.create, name="queue_create"),
    path("teams/<int:team_id>/dataset/", review_queues.filter_dataset, name="team_dataset"),
    path("queues/<int:queue_id>/assign/", review_queues.assign, name="queue_assign"),
    path("queues/<int:queue_id>/items/", review_queues.items, name="queue_items"),
    path(
        "queues/<int:queue_id>/items/<int:item_id>/assign/",
        review_queues.assign_item,
        name="queue_item_assign",
    ),
    path("queues/<int:queue_id>/review/", review_queues.review, name="queue_review"),
    path("queues/<int:queue_id>/dataset/", review_queues.dataset, name="queue_dataset"),
    path(
        "queues/<int:queue_id>/items/<int:item_id>/score/",
        review_queues.score,
        name="queue_score",
    ),
    path("queues/<int:queue_id>/items/<int:item_id>/skip/", review_queues.skip, name="queue_skip"),
    path("teams/<int:team_id>/scores/new/", scores.add_config, name="team_score_add"),
    path(
        "teams/<int:team_id>/scores/<int:config_id>/edit/",
        scores.edit_config,
        name="team_score_edit",
    ),
    path(
        "teams/<int:team_id>/scores/<int:config_id>/delete/",
        scores.delete_config,
        name="team_score_delete",
    ),
    path(
        "s/<str:session_id>/scores/<str:entry_id>/", scores.entry_scores_view, name="entry_scores"
    ),
    path("s/<str:session_id>/scores/<str:entry_id>/set/", scores.set_score, name="score_set"),
    path(
        "s/<str:session_id>/scores/<str:entry_id>/<int:score_id>/delete/",
        scores.delete_score,
        name="score_delete",
    ),
    # --- chat
    path("s/<str:session_id>/chat/send/", chat.send, name="chat_send"),
    path("s/<str:session_id>/chat/stop/", chat.stop, name="chat_stop"),
    path("s/<str:session_id>/chat/queue/", chat.queue, name="chat_queue"),
    path("s/<str:session_id>/chat/unqueue/", chat.unqueue, name="chat_unqueue"),
    path("s/<str:session_id>/chat/queued/", chat.queue_list, name="chat_queued"),
    path("s/<str:session_id>/chat/model/", chat.switch_model, name="chat_model"),
    path("s/<str:session_id>/chat/thinking/", chat.set_thinking, name="chat_thinking"),
    path("s/<str:session_id>/chat/compact/", chat.compact, name="chat_compact"),
    path("s/<str:session_id>/chat/transcript/", chat.transcript, name="chat_transcript"),
    path("s/<str:session_id>/chat/state/", chat.state, name="chat_state"),
    path("s/<str:session_id>/chat/model-notice/", chat.model_notice, name="chat_model_notice"),
    # --- where the session continues, and pi's file
    path("s/<str:session_id>/workspace/", workspace.continue_in, name="workspace_continue"),
    path("s/<str:session_id>/pi-file/", workspace.pi_file, name="pi_file"),
    path(
        "s/<str:session_id>/pi-file/write-back/",
        workspace.pi_file_write_back,
        name="pi_file_write_back",
    ),
    # --- tree, entry pane, actions, inspector
    path("s/<str:session_id>/tree/", tree.tree_panel, name="tree_panel"),
    path("s/<str:session_id>/tree/branch/<str:head_id>/", tree.tree_branch, name="tree_branch"),
    path(
        "s/<str:session_id>/tree/children/<str:node_id>/",
        tree.tree_children,
        name="tree_children",
    ),
    path(
        "s/<str:session_id>/tree/run/<str:first_id>/<str:last_id>/", tree.tree_run, name="tree_run"
    ),
    path("s/<str:session_id>/e/<str:entry_id>/", tree.entry_pane, name="entry_pane"),
    path("s/<str:session_id>/e/<str:entry_id>/output/", tree.entry_output, name="entry_output"),
    path("s/<str:session_id>/e/<str:entry_id>/text/", tree.entry_text, name="entry_text"),
    path("s/<str:session_id>/e/<str:entry_id>/raw/", tree.entry_raw, name="entry_raw"),
    path(
        "s/<str:session_id>/e/<str:entry_id>/navigate/", tree.action_navigate, name="entry_navigate"
    ),
    path("s/<str:session_id>/e/<str:entry_id>/label/", tree.action_label, name="entry_label"),
    path("s/<str:session_id>/e/<str:entry_id>/archive/", tree.action_archive, name="entry_archive"),
    path("s/<str:session_id>/e/<str:entry_id>/fork/", tree.action_fork, name="entry_fork"),
    path("s/<str:session_id>/inspect/", tree.inspector, name="inspector"),
    # --- file changes: per node, per branch, compared; restoring files
    path("s/<str:session_id>/e/<str:entry_id>/files/", changes.entry_changes, name="changes_entry"),
    path(
        "s/<str:session_id>/e/<str:entry_id>/files/branch/",
        changes.branch_changes,
        name="changes_branch",
    ),
    path(
        "s/<str:session_id>/e/<str:entry_id>/files/restore/",
        changes.restore,
        name="changes_restore",
    ),
    path(
        "s/<str:session_id>/e/<str:entry_id>/files/undo/", changes.undo_restore, name="changes_undo"
    ),
    path("s/<str:session_id>/compare/files/", changes.compare_changes, name="changes_compare"),
    # --- jobs panel
    path("s/<str:session_id>/jobs/", jobs.jobs_panel, name="jobs_panel"),
    path("s/<str:session_id>/jobs/compact/", jobs.compact_now, name="jobs_compact"),
    path("s/<str:session_id>/jobs/settings/", jobs.compaction_settings, name="jobs_settings"),
    # --- usage
    path(
        "s/<str:session_id>/usage/chart/", usage.session_context_chart, name="usage_context_chart"
    ),
    path("usage/", usage.usage_dashboard, name="usage_dashboard"),
    path("usage/export.csv", usage.usage_csv, name="usage_csv"),
    # --- models and keys
    path("templates/", prompt_templates.templates_page, name="templates_page"),
    path("templates/edit/", prompt_templates.edit_form, name="templates_edit"),
    path("templates/save/", prompt_templates.save, name="templates_save"),
    path("templates/delete/", prompt_templates.delete, name="templates_delete"),
    path("templates/import/", prompt_templates.import_folder, name="templates_import"),
    path("models/", models.models_page, name="models_page"),
    path("preferences/theme/", preferences.set_theme, name="set_theme"),
    path("models/key/", models.save_key, name="models_key"),
    path("models/key/remove/", models.remove_key, name="models_key_remove"),
    path("models/test/", models.test_model, name="models_test"),
    path("models/default/", models.save_default, name="models_default"),
    path("models/endpoints/", models.save_endpoint, name="models_endpoint"),
    path("models/endpoints/remove/", models.remove_endpoint, name="models_endpoint_remove"),
    # --- users: the admin's Users page, invitation links, one's own password
    path("users/", users.users_page, name="users"),
    path("users/new/", users.create, name="users_create"),
    path("users/<int:user_id>/active/", users.set_active, name="users_active"),
    path("users/<int:user_id>/admin/", users.set_admin, name="users_admin"),
    path("users/<int:user_id>/invite/", users.invite, name="users_invite"),
    path("invite/<str:token>/", users.accept_invitation, name="invitation"),
    path("account/password/", users.password, name="password"),
    # --- sync from a user's own machine: the tokens page, the client, the token API
    path("sync/", sync.tokens, name="sync_tokens"),
    path("sync/tokens/<int:token_pk>/revoke/", sync.revoke, name="sync_token_revoke"),
    path("sync/piweb_sync.py", sync.client, name="sync_client"),
    path("api/v1/openapi.json", sync_api.openapi, name="api_openapi"),
    path("api/v1/me", sync_api.whoami, name="api_whoami"),
    path("api/v1/files/push", sync_api.push, name="api_push"),
    path("api/v1/files/push.jsonl", sync_api.push_lines, name="api_push_lines"),
    path("api/v1/files/state", sync_api.file_state, name="api_file_state"),
    path("api/v1/files/pending", sync_api.pending, name="api_pending"),
    path(
        "api/v1/sessions/<str:session_id>/export.jsonl", sync_api.session_export, name="api_export"
    ),
]
