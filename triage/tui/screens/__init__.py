"""Screens shown over the main one."""
