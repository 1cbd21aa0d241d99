"""svar2.open on a store in an S3 bucket: a real S3 server on 127.0.0.1 (moto_server,
from PyPI's moto[server]) holds svar2.convert's output, and every read equals the
same conversion's local store."""

import os
import shutil
import socket
import subprocess
import time

import numpy as np
import pytest

import svar2
from conftest import need

BUCKET = "svar2-py"


@pytest.fixture(scope="module")
def bucket():
    need("moto_server", shutil.which("moto_server") is not None, "pip install 'moto[server]'")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(["moto_server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    saved = dict(os.environ)
    os.environ.update({
        "AWS_ACCESS_KEY_ID": "svar2py", "AWS_SECRET_ACCESS_KEY": "svar2py-secret",
        "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ALLOW_HTTP": "true", "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    })
    try:
        t0 = time.time()
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.time() - t0 < 60, "moto_server did not start"
                time.sleep(0.1)
        import boto3
        boto3.client("s3").create_bucket(Bucket=BUCKET)
        yield f"s3://{BUCKET}"
    finally:
        server.kill()
        server.wait()
        os.environ.clear()
        os.environ.update(saved)


def test_a_bucket_store_reads_as_its_local_twin(bucket, work, format_vcf):
    local = work / "s3-twin.zarr"
    url = f"{bucket}/cohort.zarr"
    geometry = dict(variants_chunk=170, samples_chunk=5, variants_shard=510, samples_shard=15)
    svar2.convert(format_vcf, local, **geometry)
    svar2.convert(format_vcf, url, **geometry)
    assert svar2.digest(url) == svar2.digest(local)
    here, there = svar2.open(local), svar2.open(url, io_threads=16)
    assert there.samples == here.samples
    rng = np.random.default_rng(3)
    for name in ["call_genotype", "call_AD", "call_DP"]:
        nv, ns = here.arrays[name].shape[:2]
        v, s = min(nv, 300), min(ns, 7)
        patches = np.stack([rng.integers(0, nv - v + 1, 20), np.full(20, v),
                            rng.integers(0, ns - s + 1, 20), np.full(20, s)], axis=1)
        patches = patches.astype(np.int64)
        assert there.read(name, patches).tobytes() == here.read(name, patches).tobytes(), name
    contig = here.contigs[0]
    (a, pa), (b, pb) = here.region(contig, 0, 100_000), there.region(contig, 0, 100_000)
    assert len(pa) > 0 and a.tobytes() == b.tobytes() and (pa == pb).all()


def test_other_url_schemes_raise_svar2_error():
    with pytest.raises(svar2.Error, match="gs:// URLs are not supported"):
        svar2.open("gs://bucket/x.zarr")
