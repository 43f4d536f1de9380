"""Prompt templates: how a row becomes (prompt, query) for the language model.

s(x) scores the query given the prompt. The named templates are the Likelihood Splits paper's
(Godbole & Jia, 2023); ``snli_label`` puts the gold label in the prompt, the paper's prompted
(``pt``) setting for SNLI.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field

from split_builders.errors import FieldError, InvalidParameterError


@dataclass(frozen=True)
class PromptTemplate:
    """A prompt and a query format string over the fields of a row.

    ``label_prompts`` maps a label value to the prompt used for rows with that label (label
    conditioned prompts); ``prompt`` is used for any other label.
    """

    name: str
    prompt: str
    query: str
    label_field: str | None = None
    label_prompts: dict = field(default_factory=dict)

    def fields(self) -> set[str]:
        formats = [self.prompt, self.query, *self.label_prompts.values()]
        names = {name for text in formats for _, name, _, _ in string.Formatter().parse(text) if name}
        return names | ({self.label_field} if self.label_field else set())

    def check_fields(self, columns, *, source: str | None = None) -> None:
        for name in sorted(self.fields()):
            if name not in columns:
                raise FieldError(name, columns, role=f"template {self.name!r}", source=source)

    def render(self, row: dict) -> tuple[str, str]:
        prompt = self.prompt
        if self.label_field is not None:
            prompt = self.label_prompts.get(row[self.label_field], self.prompt)
        return prompt.format(**row), self.query.format(**row)

    def describe(self) -> dict:
        """The template as recorded in a release's provenance."""
        described = {"name": self.name, "prompt": self.prompt, "query": self.query}
        if self.label_field:
            described.update(label_field=self.label_field, label_prompts=dict(self.label_prompts))
        return described


NAMED_TEMPLATES = {
    "snli": PromptTemplate("snli", "Premise: {premise} Hypothesis:", " {hypothesis}"),
    "snli_label": PromptTemplate(
        "snli_label", "Premise: {premise} This hypothesis is neutral:", " {hypothesis}", label_field="label",
        label_prompts={
            "entailment": "Premise: {premise} This hypothesis is entailed:",
            "neutral": "Premise: {premise} This hypothesis is neutral:",
            "contradiction": "Premise: {premise} This hypothesis is a contradiction:",
        }),
    "boolq": PromptTemplate("boolq", "Passage: {passage} Ask a question about the passage:", " {question}"),
}
# The prompted (pt) setting's default template per task.
DEFAULT_TEMPLATE = {"snli": "snli_label", "boolq": "boolq"}


def field_template(prompt_field: str | None, query_field: str) -> PromptTemplate:
    """The template of a generic table: the prompt field as is, then the query after a space."""
    if prompt_field is None:
        return PromptTemplate("fields", "", "{%s}" % query_field)
    return PromptTemplate("fields", "{%s}" % prompt_field, " {%s}" % query_field)


def resolve_template(name: str | None, *, task: str | None, prompt_field, query_field) -> PromptTemplate:
    """A named template, the task's default, or the generic one built from the fields."""
    if name is None:
        name = DEFAULT_TEMPLATE.get(task)
        if name is None:
            return field_template(prompt_field, query_field)
    if name == "fields":
        return field_template(prompt_field, query_field)
    if name not in NAMED_TEMPLATES:
        raise InvalidParameterError(
            f"unknown template {name!r}; known templates: {', '.join([*NAMED_TEMPLATES, 'fields'])}")
    return NAMED_TEMPLATES[name]


def prompted_texts(source, template: str | None = None) -> tuple[PromptTemplate, list[str], list[str]]:
    """The prompted setting's template and every row's ``(prompt, query)``: ``template`` by name, else the
    source's task default (SNLI's ``snli_label``, BoolQ's ``boolq``), else the prompt and query fields. The one
    choice ``resplit likelihood`` and the notebook API (:func:`split_builders.notebook.prompts`) make."""
    chosen = resolve_template(template, task=source.task, prompt_field=source.prompt_field,
                              query_field=source.query_field)
    prompts, queries = render_all(chosen, source)
    return chosen, prompts, queries


def render_all(template: PromptTemplate, source) -> tuple[list[str], list[str]]:
    """(prompts, queries) of every row of a :class:`~loading_scripts.source.Source`."""
    dataset = source.dataset
    template.check_fields(dataset.column_names, source=source.name)
    columns = {name: (source.labels() if name == source.label_field else source.texts(name))
               for name in template.fields()}
    prompts, queries = [], []
    for i in range(len(dataset)):
        row = {name: values[i] for name, values in columns.items()}
        prompt, query = template.render(row)
        prompts.append(prompt)
        queries.append(query)
    return prompts, queries
