"""Transforms: functions that take functions and return new ones."""
