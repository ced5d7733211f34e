"""The static trace viewer served at ``/viewer/`` (HTML, JS and CSS; no build step)."""
