"""Reading a workflow application from storage: workflow.xml, config-default.xml, the application roots."""

from __future__ import annotations

import pytest

from oozie.definitions.errors import ApplicationNotFoundError, DefinitionError
from tests.workflows.definitions.helpers import fs_action, workflow
from workflows.definitions import load_application, prepare_workflow

CONFIG_DEFAULT = (
    "<configuration><property><name>outputDir</name><value>/default-out</value></property></configuration>"
)


@pytest.fixture
def app_dir(tmp_path, settings):
    """An application directory under the only application root."""
    settings.COORD_APPLICATION_ROOTS = [str(tmp_path / "apps")]
    directory = tmp_path / "apps" / "daily"
    directory.mkdir(parents=True)
    (directory / "workflow.xml").write_text(workflow(fs_action("a", ops='<mkdir path="${outputDir}"/>')))
    return directory


def test_directory_with_config_default(app_dir):
    """A directory means its workflow.xml; config-default.xml next to it is read as Hadoop XML."""
    (app_dir / "config-default.xml").write_text(CONFIG_DEFAULT)
    xml, defaults = load_application(str(app_dir), trusted=False)
    assert xml == (app_dir / "workflow.xml").read_text()
    assert defaults == {"outputDir": "/default-out"}
    prepared = prepare_workflow(xml, {}, app_path=str(app_dir), config_default=defaults)
    assert prepared.definition.nodes["a"].spec["operations"] == [{"op": "mkdir", "path": "/default-out"}]


def test_file_path_and_file_url_without_config_default(app_dir):
    """A workflow.xml path (or file:// URL) works too; no config-default.xml gives no defaults."""
    assert load_application(str(app_dir / "workflow.xml"), trusted=False)[1] == {}
    assert load_application(f"file://{app_dir}", trusted=False)[1] == {}


def test_directory_without_workflow_xml(app_dir):
    """A directory without workflow.xml is refused saying so."""
    (app_dir / "workflow.xml").unlink()
    with pytest.raises(ApplicationNotFoundError) as caught:
        load_application(str(app_dir), trusted=False)
    assert caught.value.reason == f"cannot read the workflow application {app_dir}: the directory has no workflow.xml"


def test_outside_the_roots_refused_unless_trusted(app_dir, tmp_path):
    """An API submission reads only under the application roots; the server's CLI (trusted) may read elsewhere."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "workflow.xml").write_text(workflow(fs_action("a")))
    with pytest.raises(DefinitionError) as caught:
        load_application(str(elsewhere), trusted=False)
    assert caught.value.reason == (
        f"oozie.wf.application.path {str(elsewhere)!r} is outside the application roots (COORD_APPLICATION_ROOTS)"
    )
    assert load_application(str(elsewhere), trusted=True)[0].startswith("<workflow-app")


def test_malformed_config_default_refused(app_dir):
    """A config-default.xml that is not a Hadoop configuration is refused naming the file."""
    (app_dir / "config-default.xml").write_text("<properties/>")
    with pytest.raises(DefinitionError) as caught:
        load_application(str(app_dir), trusted=False)
    assert caught.value.reason == "the root element must be <configuration> (no namespace)"
    assert caught.value.source.endswith("daily/config-default.xml")
