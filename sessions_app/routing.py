from django.urls import path

from sessions_app.consumers import SessionConsumer, SessionListConsumer

websocket_urlpatterns = [
    path("ws/sessions/", SessionListConsumer.as_asgi()),
    path("ws/sessions/<str:session_id>/", SessionConsumer.as_asgi()),
]
