"""Kubeconfig loading follows kubectl's rules."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from kubehpc.kube.kubeconfig import (
    KubeconfigError,
    in_cluster_config,
    kubeconfig_paths,
    load_kubeconfig,
)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


ONE = """
apiVersion: v1
kind: Config
current-context: one
clusters:
- name: c1
  cluster: {server: "https://one.example:6443", certificate-authority: certs/ca.crt}
users:
- name: u1
  user: {token: secret-one}
contexts:
- name: one
  context: {cluster: c1, user: u1, namespace: team-a}
"""

TWO = """
current-context: two
clusters:
- name: c1
  cluster: {server: "https://shadowed.example"}
- name: c2
  cluster: {server: "http://two.example:8080/"}
users:
- name: u2
  user: {tokenFile: token.txt}
contexts:
- name: two
  context: {cluster: c2, user: u2}
"""


def test_current_context_gives_server_token_and_namespace(tmp_path: Path) -> None:
    cfg = load_kubeconfig([write(tmp_path / "config", ONE)]).client_config()
    assert (cfg.server, cfg.token, cfg.namespace) == ("https://one.example:6443", "secret-one", "team-a")


def test_relative_file_paths_resolve_against_the_kubeconfigs_folder(tmp_path: Path) -> None:
    cfg = load_kubeconfig([write(tmp_path / "config", ONE)]).client_config()
    assert cfg.ca_file == str(tmp_path / "certs" / "ca.crt")


def test_merged_files_keep_the_first_definition_and_first_current_context(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    write(tmp_path / "b" / "token.txt", "from-file\n")
    merged = load_kubeconfig([write(tmp_path / "a.yaml", ONE), write(tmp_path / "b" / "two.yaml", TWO)])
    assert merged.current_context == "one"
    assert merged.clusters["c1"].server == "https://one.example:6443"
    other = merged.client_config("two")
    assert (other.server, other.token, other.namespace) == ("http://two.example:8080", "from-file", "default")


def test_kubeconfig_env_lists_several_files_and_skips_missing_ones(tmp_path: Path) -> None:
    a = write(tmp_path / "a.yaml", ONE)
    paths = kubeconfig_paths(environ={"KUBECONFIG": f"{tmp_path / 'missing'}:{a}"})
    assert load_kubeconfig(paths).client_config().server == "https://one.example:6443"


def test_explicit_kubeconfig_wins_over_the_environment(tmp_path: Path) -> None:
    assert kubeconfig_paths("/x/config", environ={"KUBECONFIG": "/y/config"}) == [Path("/x/config")]


def test_unknown_context_is_an_error_listing_the_known_ones(tmp_path: Path) -> None:
    merged = load_kubeconfig([write(tmp_path / "config", ONE)])
    with pytest.raises(KubeconfigError, match=r'context "nope" does not exist \(contexts: one\)'):
        merged.client_config("nope")


def test_a_named_kubeconfig_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="does not exist"):
        load_kubeconfig([tmp_path / "absent"])


def test_inline_certificate_data_is_decoded(tmp_path: Path) -> None:
    pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    text = ONE.replace(
        "certificate-authority: certs/ca.crt", f"certificate-authority-data: {base64.b64encode(pem).decode()}"
    )
    cfg = load_kubeconfig([write(tmp_path / "config", text)]).client_config()
    assert cfg.ca_data == pem


def test_bad_base64_names_the_field(tmp_path: Path) -> None:
    text = ONE.replace("certificate-authority: certs/ca.crt", "certificate-authority-data: '@@@'")
    with pytest.raises(KubeconfigError, match="cluster c1: certificate-authority-data: not valid base64"):
        load_kubeconfig([write(tmp_path / "config", text)])


def test_in_cluster_config_reads_the_service_account_files(tmp_path: Path) -> None:
    write(tmp_path / "token", "sa-token\n")
    write(tmp_path / "ca.crt", "pem")
    write(tmp_path / "namespace", "jobs\n")
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    cfg = in_cluster_config(env, tmp_path)
    assert (cfg.server, cfg.token, cfg.namespace) == ("https://10.0.0.1:443", "sa-token", "jobs")
    assert cfg.ca_file == str(tmp_path / "ca.crt")


def test_in_cluster_config_outside_a_pod_says_so(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="not running in a cluster"):
        in_cluster_config({}, tmp_path)
