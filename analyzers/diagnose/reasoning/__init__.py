"""Reason over what was read: Flight Recorder waits and blame, progress and start-up models for silent runs,
topology and interface blame, the symptoms of a hang, and the root cause with its cascade."""
