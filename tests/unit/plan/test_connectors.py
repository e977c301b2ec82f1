"""Connector changes and their safety: new is safe, a restart of tasks disruptive, another class or other topics
and a deletion destructive; secrets never shown."""

from __future__ import annotations

import dataclasses

from kraftform.plan.changes import Action, ConnectorWork, Safety
from kraftform.plan.connectors import LiveConnector, Logins, connector_changes, declared_as_live, shown
from kraftform.specset.model import ConnectorSpec, EnvSecret

SINK = ConnectorSpec("archive", "org.apache.kafka.connect.file.FileStreamSinkConnector", "sink", ("orders.v1",),
                     config={"file": "/tmp/a.txt", "db.password": EnvSecret("DB_PASSWORD")})


def running(c: ConnectorSpec, **config: str) -> LiveConnector:
    return LiveConnector(c.name, {**c.rest_config(), **config}, "running", ((0, "running", ""),))


def test_the_same_connector_running_as_declared_is_no_change() -> None:
    assert connector_changes("c", (SINK,), {"archive": running(SINK)}) == []


def test_a_new_connector_is_safe_and_created_in_its_declared_state() -> None:
    paused = dataclasses.replace(SINK, state="paused")
    [change] = connector_changes("c", (paused,), {})
    assert (change.action, change.safety, change.resource, change.desired) == (
        Action.CREATE, Safety.SAFE, "c/archive", "paused")
    assert change.payload == ConnectorWork("create", paused.rest_config(), "paused")
    assert paused.rest_config()["db.password"] == "${env:DB_PASSWORD}"


def test_a_setting_changed_by_hand_restarts_tasks_and_a_secret_typed_in_is_hidden() -> None:
    live = running(SINK, file="/tmp/b.txt", **{"db.password": "hunter2"})
    changes = {c.key: c for c in connector_changes("c", (SINK,), {"archive": live})}
    assert set(changes) == {"file", "db.password"}
    assert (changes["file"].safety, changes["file"].current, changes["file"].desired) == (
        Safety.DISRUPTIVE, "/tmp/b.txt", "/tmp/a.txt")
    assert (changes["db.password"].current, changes["db.password"].desired) == ("(hidden)", "${env:DB_PASSWORD}")
    assert all(c.payload == ConnectorWork("config", SINK.rest_config(), None) for c in changes.values())


def test_other_topics_or_another_class_are_destructive() -> None:
    moved = dataclasses.replace(SINK, topics=("orders.v2",))
    [topics] = connector_changes("c", (moved,), {"archive": running(SINK)})
    assert (topics.key, topics.safety) == ("topics", Safety.DESTRUCTIVE)
    other = dataclasses.replace(SINK, connector_class="com.example.Sink")
    [klass] = connector_changes("c", (other,), {"archive": running(SINK)})
    assert (klass.key, klass.safety) == ("connector.class", Safety.DESTRUCTIVE)


def test_pausing_is_disruptive_resuming_safe_and_an_undeclared_connector_is_deleted_destructively() -> None:
    paused = dataclasses.replace(SINK, state="paused")
    [pause] = connector_changes("c", (paused,), {"archive": running(SINK)})
    assert (pause.key, pause.current, pause.desired, pause.safety) == ("state", "running", "paused",
                                                                       Safety.DISRUPTIVE)
    [resume] = connector_changes("c", (SINK,), {"archive": dataclasses.replace(running(SINK), state="paused")})
    assert resume.safety is Safety.SAFE and resume.payload == ConnectorWork("state", None, "running")
    [delete] = connector_changes("c", (), {"archive": running(SINK)})
    assert (delete.action, delete.safety) == (Action.DELETE, Safety.DESTRUCTIVE)


def test_a_failed_task_is_restarted_in_a_plan_but_is_no_change_between_revisions() -> None:
    failed = dataclasses.replace(running(SINK), tasks=((0, "failed", "org.apache.kafka.common.errors.X: no"),))
    [restart] = connector_changes("c", (SINK,), {"archive": failed})
    assert restart.payload == ConnectorWork("restart", None, None)
    assert "task 0: org.apache.kafka.common.errors.X: no" in restart.reason
    assert connector_changes("c", (SINK,), {"archive": declared_as_live(SINK)}, subject="diff") == []


def test_a_changed_password_of_a_connectors_own_user_restarts_its_tasks_and_shows_no_secret() -> None:
    own = dataclasses.replace(SINK, user="archiver")
    logins = Logins("/s/logins", stale=frozenset({"archiver"}))
    live = LiveConnector(own.name, own.rest_config("/s/logins"), "running", ((0, "running", ""),))
    assert connector_changes("c", (own,), {"archive": live}, logins=Logins("/s/logins")) == []
    [relogin] = connector_changes("c", (own,), {"archive": live}, logins=logins)
    assert (relogin.safety, relogin.key, relogin.payload) == (Safety.DISRUPTIVE, "login",
                                                               ConnectorWork("relogin", None, None))
    # Stopped, its tasks read the new password when they start: nothing to restart.
    [written] = connector_changes("c", (dataclasses.replace(own, state="stopped"),),
                                  {"archive": dataclasses.replace(live, state="stopped", tasks=())}, logins=logins)
    assert (written.safety, written.payload) == (Safety.SAFE, ConnectorWork("login", None, None))
    # Another user is a config change (which restarts the tasks): no second restart, and the login is shown,
    # its password a reference.
    other = dataclasses.replace(own, user="archiver-2")
    changes = connector_changes("c", (other,), {"archive": live}, logins=Logins("/s/logins", frozenset({"archiver-2"})))
    assert {c.payload.operation for c in changes if isinstance(c.payload, ConnectorWork)} == {"config"}
    jaas = next(c for c in changes if c.key == "consumer.override.sasl.jaas.config")
    assert jaas.desired is not None and 'username="archiver-2"' in jaas.desired
    assert '${dir:/s/logins:archiver-2}' in jaas.desired


def test_a_login_with_a_literal_password_is_hidden() -> None:
    assert shown("sasl.jaas.config", 'X required username="u" password="hunter2";') == "(hidden)"
    assert shown("sasl.jaas.config", 'X required username="u" password="${dir:/l:u}";') is not None
    assert "hunter2" not in str(shown("sasl.jaas.config", 'X password="${env:A}" y password="hunter2";'))
