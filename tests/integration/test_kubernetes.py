"""The Kubernetes resource manager passes the conformance kit against a real cluster.

It runs only where ``KUBECONFIG`` names a cluster the API of which answers, and
``ASSAY_TEST_K8S_IMAGE`` an image with Python, bash and this assay installed that the cluster's
nodes can pull (a kind cluster: ``kind load docker-image``). ``ASSAY_TEST_K8S_NAMESPACE`` (default
``default``) is where the pods go; the kit's pods are labelled ``assay.pool=kit`` and removed
as the kit acknowledges them. Elsewhere every test is skipped, saying why.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from assay.config import KubernetesPoolConfig
from assay.rm import ResourceManager
from assay.rm.testing import CHECKS, Subject

pytestmark = pytest.mark.integration

# The kit's side-by-side check meets its two allocations through files in /tmp: the kit's pods
# share their node's /tmp (both are placed on the same node).
KIT_POD_SPEC = {
    "spec": {
        "containers": [
            {
                "name": "determined-container",
                "volumeMounts": [{"name": "kit-tmp", "mountPath": "/tmp"}],
            }
        ],
        "volumes": [{"name": "kit-tmp", "hostPath": {"path": "/tmp/assay-kit"}}],
    }
}


def _cluster() -> tuple[KubernetesPoolConfig, str]:
    """The pool config of the cluster under test, or skip saying what is missing."""
    kubeconfig = os.environ.get("KUBECONFIG", "")
    if not kubeconfig or not Path(kubeconfig.split(os.pathsep)[0]).is_file():
        pytest.skip("no Kubernetes cluster: KUBECONFIG does not name a kubeconfig file")
    image = os.environ.get("ASSAY_TEST_K8S_IMAGE", "")
    if not image:
        pytest.skip("ASSAY_TEST_K8S_IMAGE is not set (an image with assay installed)")
    kubernetes = pytest.importorskip("kubernetes", reason="the kubernetes extra is not installed")
    config = KubernetesPoolConfig(
        namespace=os.environ.get("ASSAY_TEST_K8S_NAMESPACE", "default"),
        slot_type="cpu",
        default_image=image,
        token_secret="",
        pod_spec=KIT_POD_SPEC,
        poll_interval=0.5,
        kill_grace=10,
    )
    try:
        from assay.rm._kubernetes import load_api

        api = load_api(config)
        api.list_node(_request_timeout=10)
    except Exception as e:  # any failure to reach it: there is no cluster to test against
        pytest.skip(f"the cluster of KUBECONFIG does not answer: {' '.join(str(e).split())[:200]}")
    del kubernetes
    return config, "http://127.0.0.1:9"


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_kubernetes_pods_conform(check: Callable[[Subject], Awaitable[None]]) -> None:
    config, master_url = _cluster()
    from assay.rm._kubernetes import KubernetesManager

    async def open_manager() -> ResourceManager:
        # A new manager each time: a restarted master knows only what the cluster tells it.
        return KubernetesManager(config, pool="kit", master_url=master_url)

    asyncio.run(check(Subject(open_manager=open_manager, timeout=180.0)))
