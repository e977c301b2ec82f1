"""Consumer, share and streams groups' settings (GROUP resources) against what the specs declare. Pure.

Only the groups the specs name are managed, each in full: a setting on a declared group that the specs do not
declare is removed (the group falls back to the brokers' `group.*` default). An undeclared group's settings are
not read, so never touched. Every change is applied live by the group coordinator.
"""

from __future__ import annotations

from collections.abc import Mapping

from kraftform.plan.changes import Action, Change, ConfigValue, Kind, Safety


def group_config_changes(declared: Mapping[str, Mapping[str, str]],
                         current: Mapping[str, Mapping[str, str]]) -> list[Change]:
    """The changes that take each declared group's settings from `current` to `declared`."""
    changes: list[Change] = []
    for group in sorted(declared):
        want, now = declared[group], current.get(group, {})
        for key in sorted(set(want) | set(now)):
            before, after = now.get(key), want.get(key)
            if before == after:
                continue
            if after is None:
                action, reason = Action.DELETE, ("not in the specs: removed, the group falls back to the brokers' "
                                                 "default (live)")
            else:
                action, reason = Action.UPDATE, "group setting: the group coordinator takes it live"
            changes.append(Change(action, Kind.GROUP_CONFIG, group, Safety.SAFE, reason, key, before, after,
                                  ConfigValue(after)))
    return changes


def unmanaged_groups(base: Mapping[str, Mapping[str, str]], head: Mapping[str, Mapping[str, str]]) -> list[Change]:
    """Groups a later revision no longer declares: kraftform stops managing them, their settings stay."""
    return [Change(Action.UPDATE, Kind.GROUP_CONFIG, group, Safety.SAFE,
                   "no longer declared: kraftform stops managing it and its settings stay on the cluster",
                   None, "managed", "unmanaged") for group in sorted(set(base) - set(head))]
