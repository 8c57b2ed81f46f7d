"""Argument conditions: a small matcher language over a tool call's arguments (``when:`` in the spec).

:mod:`.paths` normalises path arguments, :mod:`.saferegex` runs regular expressions in linear time,
:mod:`.evaluate` decides a condition in three values (fail closed), :mod:`.describe` says one in words.
"""
