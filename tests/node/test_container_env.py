"""Container environment: $(VAR) expansion, valueFrom and envFrom as the kubelet builds them."""

from __future__ import annotations

import base64

import pytest

from kubehpc.node.env import ContainerConfigError, PodContext, build_env, expand

CTX = PodContext(node_name="gpu-0", host_ip="10.0.0.5", node_cpu_millis=8000, node_memory_bytes=32 << 30)


def pod(container: dict) -> dict:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "labels": {"app": "x", "tier": "a"}},
        "spec": {"nodeName": "gpu-0", "containers": [{"name": "c", "image": "i", **container}]},
    }


def lookup_from(objects: dict):
    return lambda kind, ns, name: objects.get((kind, ns, name))


def env_of(container: dict, objects: dict | None = None) -> dict:
    p = pod(container)
    return build_env(p, p["spec"]["containers"][0], CTX, lookup_from(objects or {}))


def test_expansion_replaces_defined_variables_and_keeps_undefined_ones():
    assert expand("$(A)-$(B)-$$(A)-$$-$(", {"A": "1"}) == "1-$(B)-$(A)-$-$("


def test_env_values_expand_earlier_variables_only():
    env = env_of(
        {
            "env": [
                {"name": "A", "value": "x"},
                {"name": "B", "value": "$(A)/$(C)"},
                {"name": "C", "value": "z"},
            ]
        }
    )
    assert env["B"] == "x/$(C)"


def test_field_refs_read_the_pod():
    env = env_of(
        {
            "env": [
                {"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                {"name": "UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
                {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
                {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                {"name": "ALL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels"}}},
            ]
        }
    )
    assert (env["N"], env["NS"], env["UID"], env["NODE"]) == ("p", "ns", "u-1", "gpu-0")
    assert (env["IP"], env["HOST"], env["APP"]) == ("127.0.0.1", "10.0.0.5", "x")
    assert env["ALL"] == 'app="x"\ntier="a"'


def test_resource_field_refs_round_up_by_the_divisor_and_default_to_the_node():
    env = env_of(
        {
            "resources": {"limits": {"cpu": "1500m", "memory": "1Gi"}},
            "env": [
                {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                {
                    "name": "MCPU",
                    "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}},
                },
                {
                    "name": "MEM",
                    "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
                },
                {"name": "REQ", "valueFrom": {"resourceFieldRef": {"resource": "requests.memory"}}},
            ],
        }
    )
    assert (env["CPU"], env["MCPU"], env["MEM"], env["REQ"]) == ("2", "1500", "1024", str(1 << 30))
    assert (
        env_of({"env": [{"name": "C", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]})["C"]
        == "8"
    )


def test_config_map_and_secret_keys_are_read():
    objects = {
        ("ConfigMap", "ns", "cfg"): {"data": {"mode": "fast"}},
        ("Secret", "ns", "sec"): {"data": {"token": base64.b64encode(b"s3cret").decode()}},
    }
    env = env_of(
        {
            "env": [
                {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode"}}},
                {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "token"}}},
            ]
        },
        objects,
    )
    assert (env["MODE"], env["TOKEN"]) == ("fast", "s3cret")


def test_a_missing_config_map_keeps_the_container_waiting():
    with pytest.raises(ContainerConfigError, match='configmap "cfg" not found'):
        env_of({"env": [{"name": "M", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "m"}}}]})


def test_an_optional_missing_key_is_skipped():
    objects = {("ConfigMap", "ns", "cfg"): {"data": {}}}
    ref = {"name": "cfg", "key": "m", "optional": True}
    assert "M" not in env_of({"env": [{"name": "M", "valueFrom": {"configMapKeyRef": ref}}]}, objects)


def test_env_from_comes_first_with_prefix_and_env_overrides_it():
    objects = {("ConfigMap", "ns", "cfg"): {"data": {"A": "from-cm", "B": "b", "not valid": "x"}}}
    env = env_of(
        {
            "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "P_"}, {"configMapRef": {"name": "cfg"}}],
            "env": [{"name": "A", "value": "from-env"}],
        },
        objects,
    )
    assert (env["P_A"], env["A"], env["B"]) == ("from-cm", "from-env", "b")
    assert "not valid" not in env
