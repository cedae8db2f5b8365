"""api/fields: typed reads of nested fields, each the ``obj.get(key) or {}`` it replaces."""

from kubehpc.api import fields as F

POD = {
    "metadata": {"name": "p", "labels": {"app": "a"}, "annotations": {}},
    "spec": {"containers": [{"name": "main"}], "tolerations": ({"key": "k"},)},
    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
}


def test_a_present_object_field_is_the_objects_own():
    assert F.obj_field(POD, "spec") is POD["spec"]
    assert F.metadata(POD) is POD["metadata"]
    assert F.labels(POD) is POD["metadata"]["labels"]


def test_an_absent_or_null_object_field_reads_as_a_new_empty_object():
    assert F.obj_field({}, "spec") == {}
    assert F.obj_field({"spec": None}, "spec") == {}
    assert F.status({"spec": {}}) == {}
    assert F.obj_field({}, "spec") is not F.obj_field({}, "spec")


def test_an_empty_object_field_reads_as_a_new_one_so_writing_to_it_leaves_the_object_alone():
    # As ``obj.get(key) or {}`` does: the empty value is falsy, so the default is a new dict.
    annotations = F.annotations(POD)
    annotations["added"] = "x"
    assert POD["metadata"]["annotations"] == {}


def test_an_object_field_of_another_type_reads_as_absent():
    assert F.obj_field({"spec": "text"}, "spec") == {}
    assert F.obj_field({"spec": ["a"]}, "spec") == {}


def test_a_present_list_field_is_the_objects_own():
    assert F.list_field(POD["spec"], "containers") is POD["spec"]["containers"]
    assert F.object_list(POD["spec"], "containers") is POD["spec"]["containers"]


def test_a_tuple_list_field_as_code_builds_one_reads_as_a_list_of_its_items():
    assert F.object_list(POD["spec"], "tolerations") == [{"key": "k"}]


def test_an_absent_null_or_wrongly_typed_list_field_reads_as_an_empty_list():
    assert F.list_field({}, "items") == []
    assert F.list_field({"items": None}, "items") == []
    assert F.list_field({"items": {"a": 1}}, "items") == []


def test_conditions_are_the_status_conditions_or_none():
    assert F.conditions(POD) == [{"type": "Ready", "status": "True"}]
    assert F.conditions({"metadata": {}}) == []
