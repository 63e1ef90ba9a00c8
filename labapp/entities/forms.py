"""Entity forms generated from the data-model registry, and submitted forms as batch items.

Nothing is validated here: a submitted value goes to :func:`labapp.entities.service.save_batch`
as typed as the form allows (a number input that holds no number is passed on as text), and
the service's errors are mapped back onto the inputs. So the form and the API cannot
disagree about what is valid.

An edit form carries the version it was read at and the text every input showed then
(``original``): only the inputs the user changed are sent, so an untouched field is never
rewritten, and a stale edit can be merged with the stored entity without losing either side.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from typing import Any

from werkzeug.datastructures import MultiDict

from labapp.model.registry import ClassSpec, FieldSpec
from labapp.reading.wording import label_of as label_of

# Inputs the registry type asks for; select (choices, status) and password are added below.
_WIDGETS = {"text": "textarea", "int": "number", "float": "number", "bool": "checkbox",
            "date": "date", "datetime": "datetime-local"}
# Kept by the service for these classes (their own id), so a form never offers them.
_OWN_ID_FIELDS = {"Department": "departmentID", "Project": "projectID"}
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?")
_ITEM_FIELD = re.compile(r"entities\.0\.(?P<name>[^.]+)")
ATTRIBUTES = "attributes"
FORM_ERROR = "_form"
# Inputs checked for uniqueness as the user types (see ``Input.live``): barcodes must be
# unique, and a name already in use is worth knowing about before saving.
UNIQUE_CHECKED = ("name", "barcode")
LOCATION_FIELD, POSITION_FIELD = "locationID", "position"


def input_text(spec: FieldSpec, value: Any) -> str:
    """What an input of ``spec`` shows for a stored value."""
    if value is None:
        return ""
    if spec.type == "bool":
        return "true" if value else ""
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def attribute_text(value: Any) -> str:
    """What an attribute value row shows: text as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def attribute_value(text: str) -> Any:
    """The value of an attribute row: a JSON number or ``true``/``false`` typed, else text."""
    if text in ("true", "false"):
        return text == "true"
    match = _NUMBER.fullmatch(text)
    if match is None:
        return text
    return float(text) if match.group(1) or match.group(2) else int(text)


@dataclass
class Input:
    """One input of an entity form."""

    name: str
    label: str
    widget: str
    value: str = ""
    required: bool = False
    options: tuple[str, ...] = ()
    max_length: int | None = None
    step: str | None = None
    hint: str | None = None
    error: str | None = None
    stored: str | None = None  # the stored value, shown when a conflict left it different
    # What the page asks the server as the user types: "suggest" (entities a reference may
    # point at) or "unique" (whether the text is still free); None for nothing.
    live: str | None = None
    # The options of the place picker's selects ("place", "slot"): ``(value, label)``.
    choices: tuple[tuple[str, str], ...] = ()
    # Options the page asks about before saving (an edit's move to a final status).
    confirm: tuple[str, ...] = ()


@dataclass
class EntityForm:
    """A create or edit form: its inputs, attribute rows and the edit's version."""

    spec: ClassSpec
    inputs: list[Input]
    attributes: list[tuple[str, str]] = field(default_factory=list)
    entity_id: str | None = None
    version: int | None = None
    original: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def editing(self) -> bool:
        return self.entity_id is not None

    def original_json(self) -> str:
        return json.dumps(self.original, ensure_ascii=False, sort_keys=True)

    def texts(self) -> dict[str, str]:
        return {item.name: item.value for item in self.inputs}

    def with_errors(self, errors: Mapping[str, str]) -> EntityForm:
        """This form with the errors on their inputs; others go to the form or attributes."""
        names = {item.name for item in self.inputs}
        inputs = [replace(item, error=errors.get(item.name)) for item in self.inputs]
        rest = {name: message for name, message in errors.items() if name not in names}
        return replace(self, inputs=inputs, errors=rest)


def is_placed(spec: ClassSpec) -> bool:
    """Whether entities of ``spec`` are stored in locations (samples, plates): their place
    is never a free-text input, it is chosen from what storage offers."""
    location = spec.field(LOCATION_FIELD)
    return (location is not None and location.ref == "Location"
            and spec.field(POSITION_FIELD) is not None)


def _fields(spec: ClassSpec, editing: bool) -> list[FieldSpec]:
    skipped = {"id" if editing else "", ATTRIBUTES, _OWN_ID_FIELDS.get(spec.name, "")}
    if is_placed(spec):
        skipped.update((LOCATION_FIELD, POSITION_FIELD))
    return [item for item in spec.fields.values()
            if item.attr is not None and not item.read_only and item.type != "json"
            and item.name not in skipped]


def _input(spec: ClassSpec, item: FieldSpec, value: str, status: str | None) -> Input:
    """The input of a field; ``status`` is the stored status of an edited entity (None on
    create, where any status may be given)."""
    entry = Input(item.name, label_of(item.name), _WIDGETS.get(item.type, "text"), value,
                  max_length=item.max_length)
    if item.name == "status":
        entry.widget, entry.required = "select", True
        entry.options = (spec.workflow.statuses if status is None
                         else (status, *spec.workflow.allowed_from(status)))
        if status is not None:
            entry.confirm = tuple(option for option in entry.options[1:]
                                  if spec.workflow.is_final(option))
        return entry
    if item.choices:
        entry.widget, entry.options = "select", item.choices
    if item.type in ("int", "float", "datetime"):
        entry.step = "any" if item.type == "float" else "1"
    if item.type == "datetime":
        entry.hint = "UTC"
    if item.type == "ref":
        entry.hint = f"id of a {item.ref}" if item.ref != "*" else "id of any entity"
        entry.live = "suggest" if item.ref != "*" else None
    if item.name in UNIQUE_CHECKED:
        entry.live = "unique"
    if item.name == "id":
        entry.hint = ("the username" if spec.prefix is None
                      else "leave empty for the next id of the class")
        entry.required = spec.prefix is None
    elif status is not None and not item.nullable and item.type != "bool":
        entry.required = True
    return entry


def new_form(spec: ClassSpec, prefill: Mapping[str, str] | None = None) -> EntityForm:
    """The create form: registry defaults, the initial status, values from ``prefill``."""
    inputs = []
    for item in _fields(spec, editing=False):
        default = spec.workflow.initial if item.name == "status" else item.default
        value = (prefill or {}).get(item.name) or input_text(item, default)
        inputs.append(_input(spec, item, value, None))
    if "password" in spec.create_only:
        inputs.append(Input("password", "Password", "password", required=True,
                            hint="at least 10 characters"))
    return EntityForm(spec, inputs, attributes=[("", "")])


def with_place_picker(form: EntityForm, places: list[tuple[str, str]], slots: list[str],
                      chosen: Mapping[str, str] | None = None) -> EntityForm:
    """A create form of a stored class with its place chosen from ``places`` (``(location
    id, label)``: where the user may store, with room) and ``slots`` (the free slots of the
    chosen location); ``chosen`` prefills them. Leaving the slot empty takes the first free
    one."""
    chosen = chosen or {}
    location = Input(LOCATION_FIELD, "Location", "place", chosen.get(LOCATION_FIELD, ""),
                     choices=tuple(places), hint="where it is stored; empty: not stored")
    position = Input(POSITION_FIELD, "Slot", "slot", chosen.get(POSITION_FIELD, ""),
                     choices=tuple((slot, slot) for slot in slots),
                     hint="empty: the first free slot")
    return replace(form, inputs=[*form.inputs, location, position])


def edit_form(spec: ClassSpec, entity: Mapping[str, Any]) -> EntityForm:
    """The edit form of a stored entity (as
    :func:`labapp.entities.loading.entity_detail` returns it)."""
    inputs = [_input(spec, item, input_text(item, entity.get(item.name)), entity["status"])
              for item in _fields(spec, editing=True)]
    attributes = {key: attribute_text(value)
                  for key, value in sorted((entity.get(ATTRIBUTES) or {}).items())}
    return EntityForm(spec, inputs, attributes=[*attributes.items(), ("", "")],
                      entity_id=entity["id"], version=entity["version"],
                      original={"fields": {item.name: item.value for item in inputs},
                                "attributes": attributes})


def _rows(form: MultiDict[str, str]) -> list[tuple[str, str]]:
    keys, values = form.getlist("attr_key"), form.getlist("attr_value")
    values += [""] * (len(keys) - len(values))
    return [(key.strip(), value) for key, value in zip(keys, values, strict=False)
            if key.strip() or value]


def _original(raw: str | None) -> dict[str, Any]:
    try:
        data = json.loads(raw or "{}")
    except (ValueError, RecursionError):  # not what the page sent: start from nothing
        return {}
    return data if isinstance(data, dict) else {}


def submitted(blank: EntityForm, form: MultiDict[str, str]) -> EntityForm:
    """``blank`` (the form as it was offered) holding what the browser sent."""
    inputs = []
    for item in blank.inputs:
        if item.widget == "checkbox":
            value = "true" if form.get(item.name) else ""
        else:
            value = form.get(item.name, "")
            value = value if item.widget in ("textarea", "password") else value.strip()
        inputs.append(replace(item, value=value))
    rows = _rows(form)
    version = form.get("version", "")
    return replace(blank, inputs=inputs, attributes=rows or [("", "")],
                   version=int(version) if version.isdigit() else blank.version,
                   original=_original(form.get("original")) if blank.editing else {})


def attribute_problem(form: EntityForm) -> str | None:
    """What is wrong with the attribute rows of a submitted form (a value without a key, a
    key given twice), or None."""
    keys = [key for key, _ in form.attributes if key]
    if any(value and not key for key, value in form.attributes):
        return "Give every attribute value a key."
    twice = sorted({key for key in keys if keys.count(key) > 1})
    return f"The key {twice[0]!r} is given more than once." if twice else None


def _value(spec: FieldSpec | None, text: str) -> Any:
    """The JSON value of an input's text, typed where the text allows it."""
    if spec is None:
        return text
    if spec.type == "bool":
        return text == "true"
    if text == "":
        return None
    match = _NUMBER.fullmatch(text) if spec.type in ("int", "float") else None
    if match is not None:
        if spec.type == "int" and not (match.group(1) or match.group(2)):
            return int(text) if len(text) <= 20 else text  # too long for any column: refused
        number = float(text)
        return int(number) if spec.type == "int" and number.is_integer() else number
    if spec.type == "datetime":
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return text
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return text


def batch_item(form: EntityForm) -> dict[str, Any]:
    """The ``save_batch`` item of a submitted form.

    A create sends every filled input; an edit sends its version, the inputs whose text
    differs from ``original`` and the attribute keys that were set, changed or removed.
    """
    spec = form.spec
    item: dict[str, Any] = {"eClass": spec.name}
    rows = dict(form.attributes)
    rows.pop("", None)
    if not form.editing:
        for entry in form.inputs:
            if entry.value != "" or entry.widget == "checkbox":
                item[entry.name] = _value(spec.fields.get(entry.name), entry.value)
        if rows:
            item[ATTRIBUTES] = {key: attribute_value(text) for key, text in rows.items()}
        return item
    item["id"] = form.entity_id
    if form.version is not None:
        item["version"] = form.version
    before = form.original.get("fields") or {}
    for entry in form.inputs:
        if entry.value != before.get(entry.name):
            item[entry.name] = _value(spec.fields[entry.name], entry.value)
    before_attributes = form.original.get(ATTRIBUTES) or {}
    changes: dict[str, Any] = {key: attribute_value(text) for key, text in rows.items()
                               if before_attributes.get(key) != text}
    changes.update({key: None for key in before_attributes if key not in rows})
    if changes:
        item[ATTRIBUTES] = changes
    return item


def field_errors(errors: list[dict[str, str]] | None) -> dict[str, str]:
    """``[{field: "entities.0.name", message}]`` of a batch error → ``{input name: message}``.

    Errors of one attribute key land on the attributes; anything else on the whole form.
    """
    found: dict[str, str] = {}
    for error in errors or []:
        match = _ITEM_FIELD.fullmatch(error.get("field", ""))
        name = match["name"] if match else FORM_ERROR
        if name.startswith(f"{ATTRIBUTES}."):
            name = ATTRIBUTES
        found.setdefault(name, error["message"])
    return found


def merge_conflict(form: EntityForm, stored: EntityForm) -> tuple[EntityForm, list[str]]:
    """A stale edit merged onto the stored entity, and the labels of the fields that moved.

    Inputs the user changed keep the user's text (with the stored value beside it when that
    differs); the others take the stored value. The merged form carries the stored version
    and values as its new ``original``, so saving it again applies exactly the user's changes.
    """
    before = form.original.get("fields") or {}
    stored_texts = stored.texts()
    moved: list[str] = []
    inputs = []
    for fresh, mine in zip(stored.inputs, form.inputs, strict=True):
        was = before.get(fresh.name)
        if fresh.value != was:
            moved.append(fresh.label)
        if mine.value != was:
            inputs.append(replace(fresh, value=mine.value,
                                  stored=fresh.value if fresh.value != mine.value else None))
        else:
            inputs.append(fresh)
    before_attributes = form.original.get(ATTRIBUTES) or {}
    attributes = dict(stored.original.get(ATTRIBUTES) or {})
    if attributes != before_attributes:
        moved.append("Attributes")
    my_attributes = dict(form.attributes)
    my_attributes.pop("", None)
    for key in set(before_attributes) | set(my_attributes):
        if key not in my_attributes:
            attributes.pop(key, None)
        elif before_attributes.get(key) != my_attributes[key]:
            attributes[key] = my_attributes[key]
    merged = replace(stored, inputs=inputs,
                     attributes=[*sorted(attributes.items()), ("", "")],
                     original={"fields": stored_texts,
                               ATTRIBUTES: stored.original.get(ATTRIBUTES) or {}})
    return merged, moved
