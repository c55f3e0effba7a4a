"""The Evaluation page (AppTest): an evaluation folder's summary table, bars and curves, switching task, method and example."""

import json

import pytest

from .conftest import ROOT, charts, literal, no_problems

EVALUATION = "pages/6_Evaluation.py"


def record(task: str, seed: int, rise: dict[str, float]) -> dict:
    """A small per-example record as `flashtrace eval` writes it (prompt tokens concatenate to the prompt)."""
    tokens = ["The", " key", " is", " 42", ".", " Sky", " is", " blue", "."]
    prompt = "".join(tokens)
    gold = [[prompt.index(" key"), prompt.index(".") + 1]]
    methods = {m: {"seconds": 0.1, "rise": r, "mas": r + 0.1, "recovery": 0.5, "s": [0.0, -1.0, -2.0],
                   "n": [1.0, r, 0.0], "d": [1.0, 0.5, 0.0], "scores": [0.1 * (i + 1) for i in range(len(tokens))]}
               for m, r in rise.items()}
    return {"id": f"{task}-{seed:04d}", "task": task, "prompt": prompt, "response": "It is 42.\nAnswer: 42",
            "answer": "42", "gold": gold, "n_tokens": 20, "n_prompt": len(tokens), "n_gold": 4, "tokens": tokens,
            "k": 2, "total_s": 1.0, "deletion_s": 0.5, "methods": methods}


@pytest.fixture
def eval_root(tmp_path, monkeypatch):
    root = tmp_path / "results"
    run = root / "run_a" / "examples"
    run.mkdir(parents=True)
    for seed in range(3):
        for task in ("needle", "vartrack"):
            rec = record(task, seed, {"flashtrace-k1": 0.2 + 0.1 * seed, "attention": 0.4, "flashtrace-k1-nostop": 0.3,
                                      "flashtrace-k1-gen": 0.25, "flashtrace-k1-punct": 0.35})
            (run / f"{rec['id']}.json").write_text(json.dumps(rec))
    (root / "run_a" / "settings.json").write_text(json.dumps({"model": "tiny-llama", "n": 3, "k": 2}))
    monkeypatch.setenv("FLASHTRACE_EVAL_ROOT", str(root))
    return root


def test_summary_table_bars_curves_and_one_example(open_page, eval_root):
    at = open_page(EVALUATION)
    no_problems(at)
    assert at.selectbox(key="qp_run").options == ["run_a"]
    table = at.dataframe[0].value
    assert list(table["method"]) == ["flashtrace-k1", "attention"]  # the -nostop, -gen, -punct variants are opt-in
    assert {d.proto.placeholder for d in at.dataframe} == {"—"}  # a missing value reads "—", never "None"
    assert table["RISE ↓"][0] == pytest.approx(0.3)  # mean of 0.2, 0.3, 0.4
    figs = charts(at)
    assert figs["metric_bars"]["layout"]["meta"]["task"] == "needle"
    assert {t["name"].split(" ")[0] for t in figs["mean_deletion_curves"]["data"]} == {"flashtrace-k1", "attention"}
    strips = figs["example_strips"]
    assert strips["layout"]["meta"]["gold"] is True
    assert strips["data"][0]["y"] == ["gold", "flashtrace-k1", "attention"]
    assert strips["data"][0]["z"][0] == [0, 1, 1, 1, 1, 0, 0, 0, 0]  # " key is 42." is gold
    assert any("settings" not in c.value and "model = tiny-llama" in literal(c.value) for c in at.caption)


def test_switching_task_method_and_example(open_page, eval_root):
    at = open_page(EVALUATION, task="vartrack")
    no_problems(at)
    assert charts(at)["metric_bars"]["layout"]["meta"]["task"] == "vartrack"
    at.multiselect(key="eval_methods_run_a_vartrack").select("flashtrace-k1-nostop").run()
    assert "flashtrace-k1-nostop" in list(at.dataframe[0].value["method"])
    at.selectbox(key="eval_example_run_a_vartrack").set_value("vartrack-0002").run()
    no_problems(at)
    assert "vartrack-0002" in charts(at)["example_strips"]["layout"]["title"]["text"]
    example = at.dataframe[1].value
    assert example["RISE ↓"][list(example["method"]).index("flashtrace-k1")] == pytest.approx(0.4)


def test_prompt_response_and_commands_are_drawn_when_opened(open_page, eval_root):
    """The example's prompt and response, and the eval commands, are code blocks filled only when their
    expander or popover is opened (a code block makes the browser load its syntax highlighter)."""
    at = open_page(EVALUATION)
    no_problems(at)
    assert not at.code
    at.session_state["eval_texts_run_a_needle"] = True
    at.run()
    no_problems(at)
    assert [c.value for c in at.code] == ["The key is 42. Sky is blue.", "It is 42.\nAnswer: 42"]
    at.session_state["eval_texts_run_a_needle"] = False
    at.session_state["eval_howto"] = True
    at.run()
    assert len(at.code) == 1 and at.code[0].value.startswith("flashtrace eval --task all")


def test_featured_run_opens_first_and_its_note_is_plain_text(open_page, eval_root):
    """The run marked ``featured`` in its settings (the current default) is selected on opening, and its
    note is shown as written (no Markdown)."""
    featured = eval_root / "run_b"
    (featured / "examples").mkdir(parents=True)
    for seed in range(2):
        rec = record("needle", seed, {"attention": 0.4, "ifr": 0.5, "flashtrace-k1": 0.6})  # records list baselines first
        (featured / "examples" / f"{rec['id']}.json").write_text(json.dumps(rec))
    note = "rerun with **paper** stop tokens"
    (featured / "settings.json").write_text(json.dumps({"model": "tiny-llama", "featured": True, "note": note}))
    at = open_page(EVALUATION)
    no_problems(at)
    assert at.selectbox(key="qp_run").options == ["run_b", "run_a"]
    assert at.selectbox(key="qp_run").value == "run_b"
    table = at.dataframe[0].value
    assert list(table["method"]) == ["flashtrace-k1", "ifr", "attention"]  # FlashTrace first, then IFR, then baselines
    assert table["RISE ↓"][0] == pytest.approx(0.6)
    assert any(literal(c.value) == note for c in at.caption)


def test_empty_root_and_bad_folder(open_page, tmp_path, monkeypatch):
    monkeypatch.setenv("FLASHTRACE_EVAL_ROOT", str(tmp_path / "nothing"))
    at = open_page(EVALUATION)
    no_problems(at)
    assert any("No evaluation results" in i.value for i in at.info)
    at.text_input(key="eval_path").input(str(tmp_path)).run()
    assert not at.exception
    assert any("has no `examples/*.json`" in e.value for e in at.error)


def test_committed_results_open(open_page, monkeypatch):
    """The results shipped in benchmarks/results open on the page (the default folder)."""
    monkeypatch.delenv("FLASHTRACE_EVAL_ROOT", raising=False)
    at = open_page(EVALUATION)
    no_problems(at)
    assert "eval_smollm2" in at.selectbox(key="qp_run").options
    at.selectbox(key="qp_run").set_value("eval_smollm2").run()
    no_problems(at)
    assert len(at.dataframe[0].value) == 8  # the 8 methods, without the -nostop variants
    assert (ROOT / "benchmarks" / "results" / "eval_smollm2" / "summary.json").exists()


def test_a_run_on_the_models_own_reasoning_opens_split_by_right_and_wrong(open_page, tmp_path, monkeypatch):
    """`eval --protocol own --k 0` (issue 46): the page lists a task's right and wrong answers as two groups, and
    each opens with its table, bars and one example (no deletion curve: Recovery only)."""
    from flashtrace.cli import main

    root = tmp_path / "results"
    assert main(["eval", "--model", "tiny-llama", "--protocol", "own", "--task", "needle", "--n", "2", "--length",
                 "40", "--write-tokens", "6", "--k", "0", "--methods", "flashtrace-k0,attention",
                 "--out", str(root / "own"), "--no-progress", "--no-plots"]) == 0
    monkeypatch.setenv("FLASHTRACE_EVAL_ROOT", str(root))
    at = open_page("pages/6_Evaluation.py")
    no_problems(at)
    at.query_params["task"] = "needle (wrong)"  # tiny random weights answer nothing right
    at.run()
    no_problems(at)
    assert "needle (wrong)" in literal(" ".join(m.value for m in at.markdown))
    assert at.selectbox(key="eval_example_own_needle (wrong)").options == ["needle-0000", "needle-0001"]
    assert list(at.dataframe[0].value["examples"]) == [2, 2]  # counted from Recovery: there is no RISE here
    assert "protocol = own (written by tiny-llama: 0 of 2 right, 2 kept)" in literal(" ".join(c.value for c in at.caption))
    bars = charts(at)["chart0"] if "chart0" in charts(at) else next(iter(charts(at).values()))
    assert [a["text"] for a in bars["layout"]["annotations"] if a["text"].startswith("Recovery")] and not [
        a for a in bars["layout"]["annotations"] if a["text"].startswith(("RISE", "MAS"))]  # Recovery's panel alone
    assert not {"mean_deletion_curves", "deletion_curves"} & set(charts(at))  # no empty deletion-curve chart


@pytest.mark.parametrize("run", sorted(p.parent.name for p in (ROOT / "benchmarks" / "results").glob("eval_*/run.json")))
def test_each_committed_run_on_a_models_reasoning_opens_with_its_table_and_protocol(open_page, monkeypatch, run):
    """Every committed issue-46 run (own, paper, RISE/MAS) opens on the page: its summary table, and the caption
    naming who wrote the reasoning and how many answers were right and kept."""
    monkeypatch.delenv("FLASHTRACE_EVAL_ROOT", raising=False)
    at = open_page(EVALUATION)
    at.selectbox(key="qp_run").set_value(run).run()
    no_problems(at)
    assert at.dataframe and len(at.dataframe[0].value) >= 1
    settings = json.loads((ROOT / "benchmarks" / "results" / run / "settings.json").read_text())
    protocol = settings["protocol"]
    caption = literal(" ".join(c.value for c in at.caption))
    assert f"protocol = {protocol['name']} (written by {protocol['writer']}: {protocol['right']} of " in caption
