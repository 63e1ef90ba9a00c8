/* labapp — the filter builder (templates/entities/_filter_builder.html) of the entity list
 * and of an alert rule's form.
 * Plain JS, no build step; listeners on the document, so the table's htmx swaps keep working.
 *
 * Choosing a field offers the operators of its kind (data-operators on its option) and the
 * value input that suits it: a date, a number, a list (statuses, choices, yes/no), a count
 * of days for "within the next / in the last … days", none for "is empty", and for a
 * reference a text box that suggests entities by name (entity_views.suggest, the fragment
 * the entity forms use) and puts the chosen id in add_ref. The server writes the $filter
 * from these inputs (labapp/entities/filter_builder.py;
 * filter_chips.py reads it back into chips). After a chip is removed or a
 * condition added, focus returns to the chips or to the field list rather than the page top.
 */
(function () {
  "use strict";

  if (window.labappFilterBuilder) return;  // htmx runs the script again with every swap
  window.labappFilterBuilder = true;

  var DAY_COUNTS = ["next", "last"];
  var NO_VALUE = ["isempty", "isnotempty"];
  var pendingFocus = null;
  var suggestTimer = null;

  function byId(id) { return document.getElementById(id); }

  function chosenField() {
    var select = byId("builder-field");
    return select && select.selectedIndex > 0 ? select.options[select.selectedIndex] : null;
  }

  function parsed(option, name) {
    var text = option && option.getAttribute(name);
    return text ? JSON.parse(text) : [];
  }

  function fillOperators() {
    var op = byId("builder-op");
    var field = chosenField();
    var operators = parsed(field, "data-operators");
    op.replaceChildren();
    if (!operators.length) operators = [["", "Choose a field first"]];
    operators.forEach(function (pair) {
      op.add(new Option(pair[1], pair[0]));
    });
  }

  // A choice shows in words (data-choice-words: a status "InProgress" as "In progress").
  function fillChoices(select, choices, kind, said) {
    var previous = select.value;
    select.replaceChildren();
    choices.forEach(function (choice, at) {
      var words = kind === "bool" ? (choice === "true" ? "yes" : "no") : (said[at] || choice);
      select.add(new Option(words, choice, false, choice === previous));
    });
  }

  function closeSuggestions() {
    var list = byId("builder-suggest");
    if (!list) return;
    list.replaceChildren();
    list.hidden = true;
  }

  /* Show the value input the field's kind and the operator ask for. */
  function updateValue() {
    var field = chosenField();
    var kind = field ? field.getAttribute("data-kind") : "text";
    var op = byId("builder-op").value;
    var box = byId("builder-value");
    var choice = byId("builder-choice");
    var label = byId("builder-value-label");
    var wrapper = byId("builder-value-field");
    var listed = kind === "choice" || kind === "bool";
    wrapper.hidden = NO_VALUE.indexOf(op) >= 0;
    box.hidden = box.disabled = listed || wrapper.hidden;
    choice.hidden = choice.disabled = !listed || wrapper.hidden;
    box.removeAttribute("min");
    box.removeAttribute("step");
    box.removeAttribute("role");
    box.removeAttribute("aria-autocomplete");
    box.removeAttribute("aria-controls");
    label.setAttribute("for", listed ? "builder-choice" : "builder-value");
    if (kind !== "ref") byId("builder-ref").value = "";
    closeSuggestions();
    if (listed) {
      fillChoices(choice, parsed(field, "data-choices"), kind, parsed(field, "data-choice-words"));
      label.textContent = "Value";
    } else if (DAY_COUNTS.indexOf(op) >= 0) {
      box.type = "number";
      box.min = "1";
      box.step = "1";
      label.textContent = "Number of days";
    } else if (kind === "date" || kind === "datetime") {
      box.type = "date";
      label.textContent = "Date";
    } else if (kind === "number") {
      box.type = "number";
      box.step = "any";
      label.textContent = "Number";
    } else if (kind === "ref") {
      box.type = "text";
      box.setAttribute("aria-autocomplete", "list");
      box.setAttribute("aria-controls", "builder-suggest");
      label.textContent = "Name or ID";
    } else {
      box.type = "text";
      label.textContent = "Value";
    }
  }

  function announce(text) {
    var status = byId("builder-status");
    if (status) status.textContent = text;
  }

  /* Suggestions for a reference: the suggest fragment's buttons carry id (data-value) and
   * "id — name" as text; they are offered by name, the id beside it. */
  function suggest() {
    var field = chosenField();
    var box = byId("builder-value");
    var typed = box.value.trim();
    byId("builder-ref").value = "";
    if (!field || field.getAttribute("data-kind") !== "ref" || !typed) {
      closeSuggestions();
      return;
    }
    var name = field.value;
    var url = byId("builder-field").getAttribute("data-suggest-url").replace("FIELD", name) +
      "?" + encodeURIComponent(name) + "=" + encodeURIComponent(typed);
    fetch(url, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : ""; })
      .then(function (html) {
        if (box.value.trim() !== typed) return;  // typed on since: a newer answer follows
        var doc = new DOMParser().parseFromString(html, "text/html");
        var list = byId("builder-suggest");
        list.replaceChildren();
        doc.querySelectorAll("[data-value]").forEach(function (found) {
          var id = found.getAttribute("data-value");
          var text = found.textContent.trim();
          var cut = text.indexOf(" — ");
          var entityName = cut >= 0 ? text.slice(cut + 3) : "";
          var item = document.createElement("li");
          var button = document.createElement("button");
          button.type = "button";
          button.className = "button-link";
          button.setAttribute("data-builder-pick", id);
          button.setAttribute("data-name", entityName || id);
          button.textContent = entityName ? entityName + " (" + id + ")" : id;
          item.appendChild(button);
          list.appendChild(item);
        });
        list.hidden = !list.children.length;
        announce(list.children.length ? list.children.length + " suggestions: Tab or ↓ to choose"
                                      : "No suggestions");
      });
  }

  function pick(button) {
    var box = byId("builder-value");
    byId("builder-ref").value = button.getAttribute("data-builder-pick");
    box.value = button.getAttribute("data-name");
    closeSuggestions();
    announce("Chosen: " + box.value);
    box.focus();
  }

  document.addEventListener("change", function (event) {
    if (event.target.id === "builder-field") {
      fillOperators();
      byId("builder-value").value = "";
      updateValue();
    } else if (event.target.id === "builder-op") {
      updateValue();
    }
  });

  document.addEventListener("input", function (event) {
    if (event.target.id !== "builder-value") return;
    window.clearTimeout(suggestTimer);
    suggestTimer = window.setTimeout(suggest, 200);
  });

  document.addEventListener("click", function (event) {
    var choice = event.target.closest("[data-builder-pick]");
    if (choice) {
      pick(choice);
      return;
    }
    var chip = event.target.closest("[data-chip-remove]");
    if (chip) {
      var chips = Array.prototype.slice.call(document.querySelectorAll("[data-chip-remove]"));
      pendingFocus = { chip: chips.indexOf(chip) };
    } else if (event.target.closest("#add-condition")) {
      pendingFocus = { chip: -1 };
    }
  });

  var BUILDER_INPUTS = ["builder-field", "builder-op", "builder-value", "builder-choice"];

  document.addEventListener("keydown", function (event) {
    var list = byId("builder-suggest");
    /* Enter in the builder adds its condition, also in a form whose default button is
     * another one (an alert rule's form saves the rule). */
    if (event.key === "Enter" && BUILDER_INPUTS.indexOf(event.target.id) >= 0 &&
        byId("add-condition")) {
      event.preventDefault();
      byId("add-condition").click();
      return;
    }
    if (!list || list.hidden) return;
    var buttons = Array.prototype.slice.call(list.querySelectorAll("button"));
    var at = buttons.indexOf(document.activeElement);
    if (event.key === "Escape" && (at >= 0 || event.target.id === "builder-value")) {
      event.preventDefault();
      closeSuggestions();
      byId("builder-value").focus();
    } else if (event.key === "ArrowDown" && (at >= 0 || event.target.id === "builder-value")) {
      event.preventDefault();
      buttons[Math.min(at + 1, buttons.length - 1)].focus();
    } else if (event.key === "ArrowUp" && at >= 0) {
      event.preventDefault();
      if (at === 0) byId("builder-value").focus();
      else buttons[at - 1].focus();
    }
  });

  /* Focus after the table came back: the chip now in the removed one's place (or the field
   * list when none is left), the field list after adding a condition. */
  document.addEventListener("htmx:afterSettle", function () {
    if (!pendingFocus) return;
    var chips = document.querySelectorAll("[data-chip-remove]");
    var target = pendingFocus.chip >= 0 && chips.length
      ? chips[Math.min(pendingFocus.chip, chips.length - 1)] : byId("builder-field");
    pendingFocus = null;
    if (target) target.focus();
  });

  /* A page (or a swap) showing a chosen field, after an error: its value input as it was. */
  function restore() {
    if (!chosenField()) return;
    var value = byId("builder-value").value;
    updateValue();
    if (!byId("builder-choice").disabled) byId("builder-choice").value = value;
  }

  document.addEventListener("htmx:load", function (event) {
    var swapped = event.target;
    if (swapped.id === "entity-browser" || swapped.querySelector("#filter-builder")) restore();
  });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", restore);
  else restore();
})();
