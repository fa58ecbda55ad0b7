"""Prefect flows: orchestration of nlsim stages."""
