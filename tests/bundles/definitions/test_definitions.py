"""Bundle definitions: XSD 0.1 and 0.2, hardened parsing, parameters, variables, bundle:conf, precedence."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bundles.definitions import (
    DuplicateCoordinatorError,
    parse_bundle,
    resolve_bundle,
    run_configuration,
)
from oozie.definitions import (
    DefinitionError,
    MalformedXMLError,
    MissingParameterError,
    SchemaValidationError,
    UnsafeXMLError,
    UnsupportedNamespaceError,
)
from oozie.properties import BUNDLE_ID, COORD_APP_PATH

V2 = """<bundle-app name="${appName}" xmlns="uri:oozie:bundle:0.2">
  <parameters>
    <property><name>appName</name><value>nightly</value></property>
    <property><name>root</name></property>
  </parameters>
  <controls><kick-off-time>${kickOff}</kick-off-time></controls>
  <coordinator name="hourly" critical="${hourlyCritical}">
    <app-path>${root}/hourly</app-path>
    <configuration>
      <property><name>tracker</name><value>${bundle:conf('job.tracker')}</value></property>
      <property><name>shared</name><value>from-coordinator</value></property>
    </configuration>
  </coordinator>
  <coordinator name="daily" enabled="false"><app-path>${root}/daily</app-path></coordinator>
</bundle-app>"""
PROPS = {"root": "/srv/apps", "kickOff": "2026-12-01T00:00Z", "hourlyCritical": "true", "job.tracker": "jt:8021",
         "shared": "from-bundle", "other": "kept"}


def test_a_bundle_is_parsed_as_written() -> None:
    """Name, kick-off, parameters and coordinators (name, app-path, configuration, critical, enabled) as raw text."""
    app = parse_bundle(V2)
    assert (app.schema_version, app.name, app.kick_off_time) == ("0.2", "${appName}", "${kickOff}")
    assert [p.name for p in app.parameters] == ["appName", "root"] and app.parameters[1].required
    hourly, daily = app.coordinators
    assert (hourly.name, hourly.app_path, hourly.critical, hourly.enabled) == ("hourly", "${root}/hourly", "${hourlyCritical}", None)
    assert hourly.configuration[1] == ("shared", "from-coordinator")
    assert (daily.name, daily.enabled) == ("daily", "false")


def test_every_variable_is_resolved_at_submission() -> None:
    """Properties and parameter defaults fill the name, kick-off time, app paths, flags and configuration."""
    resolved = resolve_bundle(parse_bundle(V2), PROPS)
    assert resolved.name == "nightly"
    assert resolved.kick_off_time == datetime(2026, 12, 1, tzinfo=UTC)
    hourly, daily = resolved.coordinators
    assert (hourly.app_path, hourly.critical, hourly.enabled) == ("/srv/apps/hourly", True, True)
    assert hourly.configuration == {"tracker": "jt:8021", "shared": "from-coordinator"}
    assert (daily.enabled, resolved.enabled) == (False, (hourly,))


def test_the_coordinators_configuration_wins_over_the_bundles_properties() -> None:
    """Oozie's precedence: bundle properties < the coordinator's <configuration> < app path, bundle id, user."""
    resolved = resolve_bundle(parse_bundle(V2), {**PROPS, COORD_APP_PATH: "/elsewhere", "user.name": "mallory"})
    conf = run_configuration(resolved, resolved.coordinators[0], user="ann", bundle_id="0000001-1-B")
    assert conf["shared"] == "from-coordinator" and conf["other"] == "kept"
    assert (conf[COORD_APP_PATH], conf[BUNDLE_ID], conf["user.name"]) == ("/srv/apps/hourly", "0000001-1-B", "ann")


def test_no_kick_off_time_means_now() -> None:
    """Without <kick-off-time> (or with it empty) the bundle starts at once."""
    app = parse_bundle("""<bundle-app name="b" xmlns="uri:oozie:bundle:0.1"><controls/>
        <coordinator name="c"><app-path>/a</app-path></coordinator></bundle-app>""")
    assert resolve_bundle(app, {}).kick_off_time is None


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        pytest.param({k: v for k, v in PROPS.items() if k != "root"}, "required parameters not given: root", id="missing-parameter"),
        pytest.param({**PROPS, "kickOff": "soon"}, "'soon' is not a datetime", id="bad-kick-off"),
        pytest.param({k: v for k, v in PROPS.items() if k != "job.tracker"},
                     "bundle:conf('job.tracker'): property 'job.tracker' is not set", id="bundle-conf-unset"),
        pytest.param({k: v for k, v in PROPS.items() if k != "hourlyCritical"},
                     "<coordinator hourly critical>: unresolved variable(s): hourlyCritical", id="unresolved-variable"),
    ],
)
def test_an_unresolved_value_rejects_the_bundle_naming_it(properties: dict[str, str], message: str) -> None:
    """Every variable must resolve at submission; the refusal names it (and the coordinator)."""
    with pytest.raises(DefinitionError) as caught:
        resolve_bundle(parse_bundle(V2), properties)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    if "parameter" in message:
        assert isinstance(caught.value, MissingParameterError)


@pytest.mark.parametrize(
    ("xml", "error", "message"),
    [
        pytest.param('<bundle-app name="b" xmlns="uri:oozie:bundle:0.2"><coordinator name="c"><app-path>/a</app-path>'
                     '</coordinator><coordinator name="c"><app-path>/b</app-path></coordinator></bundle-app>',
                     DuplicateCoordinatorError, "'c' is used twice", id="duplicate-coordinator-names"),
        pytest.param('<bundle-app name="b" xmlns="uri:oozie:bundle:0.2"></bundle-app>',
                     SchemaValidationError, "coordinator", id="no-coordinator"),
        pytest.param('<bundle-app name="b" xmlns="uri:oozie:bundle:0.1"><coordinator name="1bad"><app-path>/a</app-path>'
                     "</coordinator></bundle-app>", SchemaValidationError, "1bad", id="name-not-an-identifier"),
        pytest.param('<bundle-app name="b" xmlns="uri:oozie:bundle:0.1"><parameters/><coordinator name="c">'
                     "<app-path>/a</app-path></coordinator></bundle-app>", SchemaValidationError, "parameters",
                     id="parameters-need-0.2"),
        pytest.param('<bundle-app name="b" xmlns="uri:oozie:bundle:0.9"/>', UnsupportedNamespaceError, "0.9", id="unknown-schema"),
        pytest.param('<coordinator-app name="c" frequency="5" start="2026-01-01T00:00Z" end="2026-01-02T00:00Z" '
                     'timezone="UTC" xmlns="uri:oozie:coordinator:0.4"><action><workflow><app-path>task:x</app-path>'
                     "</workflow></action></coordinator-app>", UnsupportedNamespaceError, "expected <bundle-app>",
                     id="a-coordinator-is-not-a-bundle"),
        pytest.param('<!DOCTYPE b [<!ENTITY x "y">]><bundle-app name="&x;" xmlns="uri:oozie:bundle:0.2"/>',
                     UnsafeXMLError, "DOCTYPE", id="entities-refused"),
        pytest.param("<bundle-app", MalformedXMLError, "", id="malformed"),
    ],
)
def test_bad_bundle_xml_is_refused_clearly(xml: str, error: type[Exception], message: str) -> None:
    """XSD, hardening and uniqueness: a typed error whose one-line message says what is wrong."""
    with pytest.raises(error) as caught:
        parse_bundle(xml)
    assert message in str(caught.value)


def test_flags_are_true_only_when_they_say_true() -> None:
    """critical and enabled follow Java's Boolean.parseBoolean: 'true' in any case, anything else is false."""
    xml = """<bundle-app name="b" xmlns="uri:oozie:bundle:0.2">
      <coordinator name="a" critical="TRUE" enabled="yes"><app-path>/a</app-path></coordinator>
      <coordinator name="b" critical="no" enabled="True"><app-path>/b</app-path></coordinator></bundle-app>"""
    a, b = resolve_bundle(parse_bundle(xml), {}).coordinators
    assert (a.critical, a.enabled, b.critical, b.enabled) == (True, False, False, True)
