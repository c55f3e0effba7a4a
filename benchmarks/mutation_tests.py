"""Which tests drive each module's mutants in `benchmarks/mutation.py`: the fast suite's marker expression, and
per module the fast tests of its area (a module not listed runs against the whole selection of pyproject's
``[tool.mutmut]``). A test file added to a module's list makes mutmut forget that module's verdicts."""

FAST = ["-m", "not slow and not browser and not ray"]
_MODELS = ["tests/models"]
_SPAN = ["tests/attribution/test_span.py", "tests/attribution/test_span_inputs.py", "tests/attribution/test_threads.py"]
_LIBRARY = ["tests/test_library.py", "tests/test_library_concurrency.py", "tests/test_library_index.py",
            "tests/test_library_names.py"]
_TRACE = ["tests/test_trace_invariants.py", "tests/test_trace_safety.py", "tests/test_tracing.py"]
_STORY = ["tests/test_story.py", "tests/test_analysis_properties.py", "tests/test_compare.py"]
_GRAPH = ["tests/test_graph.py", "tests/test_graph_drawn_edges.py", "tests/test_graph_scale.py", "tests/viz/test_graph_figure.py",
          "tests/test_graph_hand.py"]
_LOAD = ["tests/test_trace_refusals.py", "tests/test_trace_invariants.py", "tests/test_trace_safety.py",
         "tests/test_trace_load_limits.py", "tests/test_errors.py"]
# a test whose code runs in a Jupyter kernel: mutmut's trampolines there look for the mutated source from the
# kernel's folder and fail ("Could not figure out where the code to mutate is"), which stops the stats run;
# no mutant is active in that process anyway, so it cannot kill one
_OUTSIDE = ["--deselect", "tests/test_trace_output.py::test_show_displays_html_in_a_notebook"]
# a test that lists a library as user nobody in a subprocess: the mutated copy's trampolines there cannot load
# mutmut's configuration (as nobody), which fails the stats run; no mutant is active in that process anyway
_AS_NOBODY = ["--deselect", "tests/test_index_faults.py::test_an_index_this_user_cannot_write_is_bypassed"]
# the fast tests of each module's area (a module not listed runs against the whole selection of [tool.mutmut])
MODULE_TESTS = {
    "flashtrace/base/errors.py": ["tests/test_errors.py", "tests/test_cli.py"],
    "flashtrace/base/fileio.py": [*_LIBRARY, "tests/test_trace_safety.py", "tests/test_trace_invariants.py",
                                  "tests/test_output_paths.py", "tests/test_trace_refusals.py", "tests/test_fileio.py"],
    "flashtrace/base/install.py": ["tests/test_install.py"],
    "flashtrace/base/json_budget.py": ["tests/test_json_budget.py", "tests/test_trace_parse.py", "tests/test_trace_load_limits.py",
                                       "tests/test_trace_refusals.py"],
    "flashtrace/base/progress.py": ["tests/test_install.py"],
    "flashtrace/base/lazy.py": ["tests/test_lazy.py", "tests/test_names.py"],
    "flashtrace/base/units.py": ["tests/test_units.py"],
    "flashtrace/engine/attribution/baselines.py": ["tests/evaluate/test_baselines.py", "tests/attribution/test_registry.py"],
    "flashtrace/engine/attribution/hops.py": ["tests/attribution/test_hops.py", "tests/test_tracing.py"],
    "flashtrace/engine/attribution/registry.py": ["tests/attribution/test_registry.py", "tests/test_tracing.py"],
    "flashtrace/engine/attribution/span.py": [*_SPAN, "tests/attribution/test_layer_threads.py"],
    "flashtrace/engine/attribution/steps.py": ["tests/test_steps.py"],
    "flashtrace/engine/attribution/tokenwise.py": [*_SPAN, "tests/test_steps.py", "tests/test_variants.py"],
    "flashtrace/engine/throughput.py": ["tests/test_throughput.py", "tests/evaluate/test_score_precision.py"],
    "flashtrace/engine/estimate.py": ["tests/test_estimate.py", "tests/test_estimate_time.py", "tests/test_prechecks.py",
                                   "tests/test_throughput.py", "tests/evaluate/test_score_precision.py"],
    "flashtrace/engine/inputs/chat.py": ["tests/test_chat.py", "tests/test_inputs.py", "tests/models/test_hf_arguments.py"],
    "flashtrace/engine/models/progress.py": ["tests/models/test_layer_progress.py", "tests/evaluate/test_deletion.py"],
    "flashtrace/engine/inputs/sequence.py": ["tests/test_inputs.py", "tests/test_segments.py", "tests/test_tracing.py"],
    "flashtrace/engine/inputs/spans.py": ["tests/test_inputs.py", "tests/test_properties.py::test_answer_span_precedence",
                                          "tests/test_properties.py::test_answer_span_examples_by_precedence"],
    "flashtrace/engine/kernels/proximity.py": [*_SPAN, "tests/attribution/test_warm_up.py"],
    "flashtrace/engine/kernels/softmax.py": ["tests/models/test_lse.py", *_SPAN],
    "flashtrace/engine/models/aliases.py": ["tests/models/test_loading.py"],
    "flashtrace/engine/models/attention.py": ["tests/models/test_lse.py", "tests/models/test_recording.py", *_SPAN],
    "flashtrace/engine/models/borrow.py": ["tests/models/test_borrow.py", "tests/models/test_model_objects.py"],
    "flashtrace/engine/models/builtin.py": ["tests/models/test_prepare.py"],
    "flashtrace/engine/models/chunks.py": ["tests/models/test_prepare.py"],
    "flashtrace/engine/models/prepare.py": ["tests/models/test_prepare.py", "tests/models/test_loading.py"],
    "flashtrace/engine/models/gguf_convert.py": ["tests/models/test_prepare.py"],
    "flashtrace/engine/models/decode.py": ["tests/models/test_decode.py", "tests/models/test_generation_stream.py"],
    "flashtrace/engine/kernels/gemv.py": ["tests/models/test_decode.py"],
    "flashtrace/engine/choices.py": ["tests/models/test_prepare.py"],
    "flashtrace/engine/models/families.py": ["tests/models/test_families.py", "tests/models/test_verify.py",
                                            "tests/models/test_loading.py"],
    "flashtrace/engine/models/generation.py": ["tests/test_tracing.py", "tests/test_cli.py", "tests/test_prechecks.py",
                                              "tests/models/test_generation_stream.py",
                                              "tests/models/test_generation_options.py",
                                              "tests/test_reasoning_instruction.py"],
    "flashtrace/engine/models/loading.py": [*_MODELS, "tests/test_prechecks.py"],
    "flashtrace/engine/models/memory.py": ["tests/test_prechecks.py", "tests/test_estimate.py", "tests/test_memory_checks.py",
                                          "tests/models/test_memory.py"],
    "flashtrace/engine/models/recording.py": _MODELS,
    "flashtrace/engine/models/tiny.py": ["tests/models/test_tiny.py"],
    "flashtrace/engine/models/verify.py": ["tests/models/test_verify.py"],
    "flashtrace/engine/models/scoring.py": ["tests/evaluate/test_score_precision.py", "tests/test_throughput.py"],
    "flashtrace/analysis/diff.py": ["tests/test_diff.py"],
    "flashtrace/analysis/check.py": [*_STORY, "tests/evaluate/test_faithfulness.py"],
    "flashtrace/analysis/compare.py": _STORY,
    "flashtrace/analysis/graph_edges.py": ["tests/test_graph_edges.py", *_GRAPH[:3]],
    "flashtrace/analysis/graph_prune.py": ["tests/test_graph_pruning.py", *_GRAPH],
    "flashtrace/analysis/invariants.py": [*_LOAD, "tests/test_intervention_facts.py", "tests/test_properties.py"],
    "flashtrace/analysis/interventions.py": ["tests/test_intervention_facts.py", "tests/test_cli_intervene.py"],
    "flashtrace/analysis/summary.py": ["tests/test_trace_output.py", "tests/test_cli.py", *_OUTSIDE],
    "flashtrace/analysis/facts.py": ["tests/test_facts.py", "tests/test_story.py", "tests/test_analysis_properties.py"],
    "flashtrace/analysis/graph.py": _GRAPH,
    "flashtrace/analysis/limits.py": ["tests/test_option_limits.py", "tests/test_trace_refusals.py",
                                      "tests/test_prechecks.py", "tests/test_cli.py", "tests/test_trace_invariants.py"],
    "flashtrace/analysis/schema.py": ["tests/test_schema.py", *_TRACE, "tests/test_trace_refusals.py", *_LOAD[3:],
                                      "tests/test_steps.py", "tests/test_library.py"],
    "flashtrace/analysis/segments.py": ["tests/test_segments.py"],
    "flashtrace/analysis/story.py": ["tests/test_story_captions.py", "tests/test_story.py"],
    "flashtrace/analysis/gold.py": ["tests/test_gold.py", *_STORY, "tests/test_gallery.py"],
    "flashtrace/analysis/graph_words.py": ["tests/test_graph_words.py", "tests/test_story.py"],
    "flashtrace/analysis/records.py": ["tests/test_resample.py", "tests/test_intervention_facts.py",
                                       "tests/test_trace_refusals.py"],
    "flashtrace/analysis/text.py": ["tests/test_text.py", *_STORY, "tests/viz/test_label_text.py"],
    "flashtrace/analysis/views.py": ["tests/viz/test_heatmap.py", "tests/viz/test_tokens_html.py"],
    "flashtrace/store/app_files.py": ["tests/test_app_files.py", "tests/test_gallery.py"],
    "flashtrace/store/gallery.py": ["tests/test_gallery.py"],
    "flashtrace/store/index.py": [*_LIBRARY, "tests/test_index_faults.py", "tests/test_index.py", *_AS_NOBODY],
    "flashtrace/store/index_file.py": [*_LIBRARY, "tests/test_index_faults.py", "tests/test_index_file.py", *_AS_NOBODY],
    "flashtrace/store/pairs.py": ["tests/test_pairs.py"],
    "flashtrace/store/library.py": [*_LIBRARY, "tests/test_properties.py::test_any_title_saves_reopens_renames_and_deletes"],
}
