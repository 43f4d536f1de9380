"""QA/RC -> NLI recasting on small examples shaped like DROP and CosmosQA rows."""

import pytest

from loading_scripts.recast import entity_swap_to_nli, named_entities, normalise_label, qa_to_nli
from split_builders.errors import InvalidParameterError

DROP = {  # shaped like the DROP passages CURRICULUM recast (its drop.zip's first validation premise)
    "context": "Hoping to rebound from their loss to the Patriots, the Raiders stayed at home for a Week 16 duel "
               "with the Houston Texans. Oakland would get the early lead in the first quarter as quarterback "
               "JaMarcus Russell completed a 20-yard touchdown pass to rookie wide receiver Chaz Schilens. "
               "The Texans would respond with fullback Vonta Leach getting a 1-yard touchdown run.",
    "question": "Who caught the first touchdown pass?",
    "answer": "Chaz Schilens caught the first touchdown pass",
}
COSMOS = {
    "context": "She had her first field practice with her new team last night. It looks like they are going to do "
               "really well. The coach knows his stuff.",
    "question": "What is the narrator's general outlook on the team?",
    "answer": "The narrator is optimistic about the team.",
    "options": ["The narrator is optimistic about the team.", "The narrator thinks the coach is bad.",
                "The narrator is worried about the season.", "None of the above choices."],
}


def test_qa_concatenation_gives_an_entailed_and_a_seeded_wrong_row():
    rows = qa_to_nli(COSMOS["context"], COSMOS["question"], COSMOS["answer"], COSMOS["options"], random_state=0)
    assert [r["gold_label"] for r in rows] == ["entailed", "not-entailed"]
    assert rows[0]["premise"] == rows[1]["premise"]
    assert rows[0]["premise"].startswith(COSMOS["context"]) and rows[0]["premise"].endswith(COSMOS["question"])
    assert rows[0]["hypothesis"] == COSMOS["answer"]
    assert rows[1]["hypothesis"] in COSMOS["options"][1:]
    again = qa_to_nli(COSMOS["context"], COSMOS["question"], COSMOS["answer"], COSMOS["options"], random_state=0)
    assert again == rows
    picked = {qa_to_nli(COSMOS["context"], COSMOS["question"], COSMOS["answer"], COSMOS["options"],
                        random_state=seed)[1]["hypothesis"] for seed in range(30)}
    assert picked == set(COSMOS["options"][1:])  # every wrong option can be drawn, never the gold one


def test_qa_concatenation_needs_a_wrong_option():
    with pytest.raises(InvalidParameterError, match="no wrong option"):
        qa_to_nli("ctx", "q?", "yes", ["yes", " "], random_state=0)


def test_named_entities_skip_sentence_initial_function_words():
    entities = named_entities(DROP["context"])
    assert "Houston Texans" in entities and "JaMarcus Russell" in entities and "Chaz Schilens" in entities
    assert "Week 16" in entities and "Patriots" in entities
    assert "The" not in entities  # "The Texans would ...": a sentence-initial function word is no name


def test_entity_swap_replaces_an_answer_entity_with_another_from_the_context():
    rows = entity_swap_to_nli(DROP["context"], DROP["question"], DROP["answer"], random_state=3)
    assert [r["gold_label"] for r in rows] == ["entailed", "not-entailed"]
    swapped = rows[1]["hypothesis"]
    assert swapped != DROP["answer"] and "Chaz Schilens" not in swapped
    assert swapped.endswith("caught the first touchdown pass")
    replacement = swapped[: -len(" caught the first touchdown pass")]
    assert replacement in named_entities(DROP["context"])


def test_entity_swap_swaps_numbers_for_numbers():
    context = "The Raiders kicked a 33-yard and a 30-yard field goal, and Brown kicked a 53-yard one."
    rows = entity_swap_to_nli(context, "How long was the longest field goal?", "53", random_state=0)
    assert rows[1]["hypothesis"] in {"33", "30"}


def test_entity_swap_without_an_entity_is_an_error():
    with pytest.raises(InvalidParameterError, match="no named entity"):
        entity_swap_to_nli(DROP["context"], "q?", "it was raining", random_state=0)


def test_label_normalisation_folds_three_way_names_into_two_way():
    assert normalise_label("entailment", ("entailed", "not-entailed")) == "entailed"
    assert normalise_label("neutral", ("entailed", "not-entailed")) == "not-entailed"
    assert normalise_label("neutral", ("entailment", "neutral", "contradiction")) == "neutral"
    with pytest.raises(InvalidParameterError, match="not one of entailment, neutral, contradiction"):
        normalise_label("entailed", ("entailment", "neutral", "contradiction"))
