"""The manifests in deploy/kubernetes read back through the official client's models (no
cluster here: that they apply is not checked), and the master.yaml they carry loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("kubernetes")

from assay.config import KubernetesPoolConfig, load_master_config
from assay.rm._pods import as_model

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "kubernetes"
MODELS = {
    "Namespace": "V1Namespace",
    "ServiceAccount": "V1ServiceAccount",
    "Role": "V1Role",
    "RoleBinding": "V1RoleBinding",
    "ClusterRole": "V1ClusterRole",
    "ClusterRoleBinding": "V1ClusterRoleBinding",
    "Secret": "V1Secret",
    "PersistentVolumeClaim": "V1PersistentVolumeClaim",
    "ConfigMap": "V1ConfigMap",
    "Deployment": "V1Deployment",
    "Service": "V1Service",
}


def documents() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(DEPLOY.glob("*.yaml")):
        for i, doc in enumerate(yaml.safe_load_all(path.read_text(encoding="utf-8"))):
            if doc is not None:
                found.append((f"{path.name}[{i}]", doc))
    return found


def by_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for _, doc in documents() if doc["kind"] == kind]


def test_the_deploy_directory_has_every_piece_the_master_needs() -> None:
    kinds = {doc["kind"] for _, doc in documents()}
    assert kinds == set(MODELS), f"kinds found: {sorted(kinds)}"


@pytest.mark.parametrize(("where", "doc"), documents(), ids=[w for w, _ in documents()])
def test_every_manifest_is_a_valid_object_of_its_kind(where: str, doc: dict[str, Any]) -> None:
    assert doc["kind"] in MODELS, f"{where}: a kind the test does not know"
    made, problems = as_model(doc, MODELS[doc["kind"]])
    assert problems == [], f"{where}: {problems}"
    assert made is not None
    assert made.metadata.name
    if doc["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
        assert made.metadata.namespace == "assay", where


def test_the_master_yaml_in_the_config_map_loads_with_a_kubernetes_pool(tmp_path: Path) -> None:
    (config_map,) = by_kind("ConfigMap")
    path = tmp_path / "master.yaml"
    path.write_text(config_map["data"]["master.yaml"], encoding="utf-8")
    config = load_master_config(path)
    (pool,) = config.resource_pools
    assert pool.type == "kubernetes"
    assert isinstance(pool.kubernetes, KubernetesPoolConfig)
    assert pool.kubernetes.namespace == "assay"
    (secret,) = by_kind("Secret")
    assert pool.kubernetes.token_secret == secret["metadata"]["name"]
    claims = {c["metadata"]["name"] for c in by_kind("PersistentVolumeClaim")}
    assert pool.kubernetes.checkpoint_claim in claims


def test_the_deployment_runs_the_master_with_the_config_its_account_and_the_token() -> None:
    (deployment,) = by_kind("Deployment")
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert container["command"] == ["assay", "master", "--config", "/etc/assay/master.yaml"]
    (account,) = by_kind("ServiceAccount")
    assert spec["serviceAccountName"] == account["metadata"]["name"]
    token = next(e for e in container["env"] if e["name"] == "ASSAY_AGENT_TOKEN")
    (secret,) = by_kind("Secret")
    assert token["valueFrom"]["secretKeyRef"]["name"] == secret["metadata"]["name"]
    (service,) = by_kind("Service")
    assert service["spec"]["selector"] == deployment["spec"]["template"]["metadata"]["labels"]


def test_the_role_grants_what_the_manager_calls() -> None:
    (role,) = by_kind("Role")
    grants = {
        (resource, verb)
        for rule in role["rules"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    for call in (
        ("pods", "create"),
        ("pods", "get"),
        ("pods", "list"),
        ("pods", "delete"),
        ("pods", "patch"),
        ("pods/log", "get"),
        ("services", "create"),
        ("services", "get"),
        ("services", "list"),
        ("services", "delete"),
    ):
        assert call in grants, call
    (cluster_role,) = by_kind("ClusterRole")
    assert ("nodes", "list") in {
        (r, v) for rule in cluster_role["rules"] for r in rule["resources"] for v in rule["verbs"]
    }
