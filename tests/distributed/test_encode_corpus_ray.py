"""Token shards encoded on the session's local Ray cluster are byte-identical to this machine's:
through ``hf_bbpe.distributed.encode_texts`` in this process, and through ``hf-bbpe encode-corpus
--ray ADDRESS``, a separate driver that joins the cluster. One ``TextEncoderPool`` serves many
lists in order across actors and blocks, carries lone surrogates, resumes one shard ahead, and
survives an actor killed mid-job."""

from __future__ import annotations

import pytest

from hf_bbpe.token_shards import local_encoder, write_token_shards
from tests.support.cli import run_cli
from tests.support.hf import EOT, mix_docs, trained_engine
from tests.support.shards import folder_bytes, shard_documents, write_corpus

ray = pytest.importorskip("ray")  # the cluster fixture fails in CI without Ray


def test_encode_texts_gives_the_ids_in_order(cluster):
    from hf_bbpe.distributed import encode_texts

    docs = mix_docs()
    tok = trained_engine(1024)
    ids, offsets = encode_texts(docs, tok, num_actors=1)
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == [tok.encode_ordinary(d) for d in docs]


def test_one_pool_encodes_many_lists_in_order_across_actors_and_blocks(cluster):
    from hf_bbpe.distributed import TextEncoderPool

    docs = mix_docs()
    tok = trained_engine(1024)
    expected = [tok.encode_ordinary(d) for d in docs]
    with TextEncoderPool(tok, num_actors=2, block_bytes=2_000) as pool:  # many blocks, both actors
        actors = list(pool.actors)
        for part in (docs, docs[::-1], docs[:1], []):
            ids, offsets = pool.encode(part)
            assert ids.dtype.name == "uint32" and offsets.dtype.name == "int64" and len(offsets) == len(part) + 1
            assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == \
                [tok.encode_ordinary(d) for d in part]
        assert pool.actors == actors  # the same actors served every list
    assert expected  # the corpus is not empty


def test_lone_surrogates_and_empty_texts_travel_as_they_are(cluster):
    from hf_bbpe.distributed import encode_texts

    tok = trained_engine(1024)
    texts = ["caf\u00e9 \ud800 end", "", "plain text", "\udfff", "\U0001f600 emoji"]
    ids, offsets = encode_texts(texts, tok, num_actors=1)
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == [tok.encode_ordinary(t) for t in texts]


def test_shards_on_ray_equal_local_shards(cluster, tmp_path):
    from hf_bbpe.distributed import encode_texts

    docs = mix_docs()
    tok = trained_engine(1024)
    options = {"eos_id": 1030, "shard_bytes": 60_000, "progress": False}
    write_token_shards(docs, tok, tmp_path / "local", encoder=local_encoder(tok, 1), **options)
    write_token_shards(docs, tok, tmp_path / "ray", encoder=lambda texts: encode_texts(texts, tok, num_actors=1),
                       batch_bytes=60_000, **options)
    assert folder_bytes(tmp_path / "ray") == folder_bytes(tmp_path / "local")
    assert shard_documents(tmp_path / "ray")[7] == tok.encode_ordinary(docs[7]) + [1030]


def test_cli_on_a_ray_cluster_equals_the_cli_here(cluster, mix_tok_dir, tmp_path):
    files, _ = write_corpus(tmp_path / "corpus")
    common = ["encode-corpus", *files, "--tokenizer", mix_tok_dir, "--docs", "line", "--shard-mb", "0.1", "--no-progress"]
    run_cli(*common, "--out", tmp_path / "here")
    address = ray.get_runtime_context().gcs_address
    run_cli(*common, "--out", tmp_path / "ray", "--ray", address, "--workers", "1", timeout=300)
    assert folder_bytes(tmp_path / "ray") == folder_bytes(tmp_path / "here")
    assert len(shard_documents(tmp_path / "ray")[0]) > 1 and shard_documents(tmp_path / "ray")[0][-1] == 512  # EOT


def test_a_pool_one_shard_ahead_resumes_without_losing_or_repeating(cluster, tmp_path):
    """The writer reads the next shard while the pool encodes one (``submit``); an error while
    reading leaves the manifest at a committed shard, and the run resumes to the local bytes."""
    import json

    from hf_bbpe.distributed import TextEncoderPool

    docs = mix_docs()
    tok = trained_engine(1024)

    def failing_after(n):
        yield from docs[:n]
        raise OSError("the disk went away")

    options = {"eos_id": 1030, "shard_bytes": 20_000, "batch_bytes": 7_000, "progress": False}
    with TextEncoderPool(tok, num_actors=2, block_bytes=3_000) as pool:
        with pytest.raises(OSError, match="went away"):
            write_token_shards(failing_after(700), tok, tmp_path / "resumed", encoder=pool, **options)
        manifest = json.loads((tmp_path / "resumed" / "manifest.json").read_text(encoding="utf-8"))
        assert not manifest["complete"] and 0 < manifest["documents"] < 700
        write_token_shards(docs, tok, tmp_path / "resumed", encoder=pool, **options)
    write_token_shards(docs, tok, tmp_path / "local", encoder=local_encoder(tok, 1), **options)
    assert folder_bytes(tmp_path / "resumed") == folder_bytes(tmp_path / "local")


def test_an_actor_killed_mid_job_is_restarted_and_loses_nothing(cluster):
    from hf_bbpe.distributed import TextEncoderPool

    docs = mix_docs()
    tok = trained_engine(1024)
    with TextEncoderPool(tok, num_actors=1, block_bytes=2_000) as pool:
        result = pool.submit(docs)  # dozens of blocks queued on the one actor
        ray.kill(pool.actors[0], no_restart=False)
        ids, offsets = result()
        assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == [tok.encode_ordinary(d) for d in docs]
        ids, offsets = pool.encode(docs[:3])  # the restarted actor goes on serving
        assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == [tok.encode_ordinary(d) for d in docs[:3]]
