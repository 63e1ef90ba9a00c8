/* labapp — small enhancements on top of htmx. Plain JS, no build step.
 *
 * Failed htmx requests are never silent: the problem title/detail is shown in #htmx-error
 * (created at the top of <main> when missing). Machine faces answer with
 * application/problem+json; HTML pages answer with templates/error.html, whose
 * .problem-title/.problem-detail/.problem-errors elements are read instead.
 */
(function () {
  "use strict";

  // A form region marked data-swap-invalid shows its 400 answer (the form with its inline
  // errors) in place; htmx leaves 4xx answers unswapped by default. A listener rather than
  // an inline hx-on handler, so a Content-Security-Policy without unsafe-eval keeps working.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (event.detail.xhr.status === 400 && target && target.closest("[data-swap-invalid]")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  function errorBox() {
    var box = document.getElementById("htmx-error");
    if (!box) {
      box = document.createElement("div");
      box.id = "htmx-error";
      box.className = "flash flash-error";
      box.setAttribute("role", "alert");
      var main = document.getElementById("main") || document.body;
      main.insertBefore(box, main.firstChild);
    }
    return box;
  }

  function fromProblemJson(text) {
    var body = JSON.parse(text);
    return { title: body.title, detail: body.detail, errors: body.errors || [] };
  }

  function fromErrorPage(text) {
    var doc = new DOMParser().parseFromString(text, "text/html");
    var title = doc.querySelector(".problem-title");
    if (!title) return null;
    var detail = doc.querySelector(".problem-detail");
    var errors = [];
    doc.querySelectorAll(".problem-errors li").forEach(function (li) {
      errors.push({ message: li.textContent.trim() });
    });
    return { title: title.textContent.trim(), detail: detail ? detail.textContent.trim() : "", errors: errors };
  }

  function describe(xhr) {
    var type = (xhr.getResponseHeader("Content-Type") || "").toLowerCase();
    var problem = null;
    try {
      if (type.indexOf("json") !== -1) problem = fromProblemJson(xhr.responseText);
      else if (type.indexOf("html") !== -1) problem = fromErrorPage(xhr.responseText);
    } catch (ignored) {
      problem = null;
    }
    return problem || { title: "Request failed", detail: "The server answered " + xhr.status +
                        (xhr.statusText ? " " + xhr.statusText : "") + ".", errors: [] };
  }

  function show(problem) {
    var box = errorBox();
    box.textContent = "";
    var dismiss = document.createElement("button");
    dismiss.type = "button";
    dismiss.className = "button-link dismiss";
    dismiss.textContent = "Dismiss";
    dismiss.addEventListener("click", function () { box.remove(); });
    box.appendChild(dismiss);
    var title = document.createElement("strong");
    title.textContent = problem.title || "Request failed";
    box.appendChild(title);
    if (problem.detail) box.appendChild(document.createTextNode(" " + problem.detail));
    if (problem.errors && problem.errors.length) {
      var list = document.createElement("ul");
      problem.errors.forEach(function (error) {
        var item = document.createElement("li");
        item.textContent = error.field ? error.field + ": " + error.message : error.message;
        list.appendChild(item);
      });
      box.appendChild(list);
    }
    box.scrollIntoView({ block: "nearest" });
  }

  document.addEventListener("htmx:responseError", function (event) {
    show(describe(event.detail.xhr));
  });
  document.addEventListener("htmx:sendError", function () {
    show({ title: "Network error", detail: "The server could not be reached. Try again." });
  });
  document.addEventListener("htmx:timeout", function () {
    show({ title: "Timed out", detail: "The server took too long to answer. Try again." });
  });
})();

/* "Add row" of a key/value table (entity attributes): copy the row template in place. Without
 * JavaScript the same button posts the form back and the server adds the row. */
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-add-row]");
    var template = button && document.getElementById(button.getAttribute("data-add-row"));
    if (!template) return;
    event.preventDefault();
    var row = template.content.firstElementChild.cloneNode(true);
    template.parentNode.insertBefore(row, template);
    var first = row.querySelector("input");
    if (first) first.focus();
  });
})();

/* A region marked data-swap-conflict shows its 409 answer in place: the page explains the
 * refusal there (the last administrator, a department still in use) instead of an error box. */
(function () {
  "use strict";

  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (event.detail.xhr.status === 409 && target && target.closest("[data-swap-conflict]")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();

/* Suggest boxes (grantees on the access pages): a click on a suggestion copies its value into
 * the box and closes the list. Without JavaScript the box is a plain text field.
 * Forms marked data-confirm ask before a plain (non-htmx) submit, as hx-confirm does for htmx;
 * a select marked data-confirm-values asks when it is submitted changed to one of them (an
 * edit form's status set to a final one), with data-confirm-message ({value}: the choice). */
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    var choice = event.target.closest("[data-suggest-for]");
    var input = choice && document.getElementById(choice.getAttribute("data-suggest-for"));
    if (!input) return;
    input.value = choice.getAttribute("data-value");
    var list = choice.closest("[data-suggestions]");
    if (list) list.replaceChildren();
    input.focus();
  });

  function changedTo(select) {
    var values = select.getAttribute("data-confirm-values").split(" ");
    var initial = Array.prototype.find.call(select.options, function (option) {
      return option.defaultSelected;
    });
    return values.indexOf(select.value) >= 0 && (!initial || initial.value !== select.value);
  }

  document.addEventListener("submit", function (event) {
    var message = event.target.getAttribute("data-confirm");
    if (message && !window.confirm(message)) {
      event.preventDefault();
      return;
    }
    var selects = event.target.querySelectorAll("select[data-confirm-values]");
    for (var index = 0; index < selects.length; index++) {
      var select = selects[index];
      if (!changedTo(select)) continue;
      var question = select.getAttribute("data-confirm-message").split("{value}").join(select.value);
      if (!window.confirm(question)) {
        event.preventDefault();
        return;
      }
    }
  });
})();

/* The children tree of a detail page: a toggle's first click lets htmx load the row's
 * children below it; later clicks fold and unfold them without asking again. Without
 * JavaScript a toggle is a link to the child's own page. */
(function () {
  "use strict";

  function subtreeOf(toggle) {
    var row = toggle.closest(".tree-item");
    return row && row.querySelector(":scope > .subtree");
  }

  document.addEventListener("htmx:afterSwap", function (event) {
    var subtree = event.detail.target;
    if (!subtree.classList || !subtree.classList.contains("subtree")) return;
    var toggle = subtree.parentElement.querySelector(":scope > [data-tree-toggle]");
    if (toggle) {
      toggle.setAttribute("data-loaded", "");
      toggle.setAttribute("aria-expanded", "true");
    }
  });

  // Capture phase: once loaded, the click is handled here and never reaches htmx.
  document.addEventListener("click", function (event) {
    var toggle = event.target.closest("[data-tree-toggle][data-loaded]");
    var subtree = toggle && subtreeOf(toggle);
    if (!subtree) return;
    event.preventDefault();
    event.stopPropagation();
    var open = toggle.getAttribute("aria-expanded") === "true";
    subtree.hidden = open;
    toggle.setAttribute("aria-expanded", open ? "false" : "true");
  }, true);
})();

/* Dates and timestamps in the viewer's locale and time zone. The server writes
 * <time datetime="2024-03-05T22:30:00Z">2024-03-05T22:30:00Z</time> (a date alone as
 * datetime="2024-03-05"), which reads as it is without JavaScript; here the text becomes
 * the local form and the exact UTC value moves to the tooltip. A date alone is a calendar
 * day, not a moment: it is shown as that day everywhere (formatted in UTC). */
(function () {
  "use strict";

  var DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
  var dayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" });
  var momentFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

  function localise(root) {
    if (!root.querySelectorAll) return;
    root.querySelectorAll("time[datetime]").forEach(function (element) {
      var value = element.getAttribute("datetime");
      var parsed = new Date(value);
      if (isNaN(parsed.getTime())) return;
      element.textContent = (DATE_ONLY.test(value) ? dayFormat : momentFormat).format(parsed);
      element.title = value;
    });
  }

  document.addEventListener("DOMContentLoaded", function () { localise(document); });
  // Content htmx swaps in (a page of a table, the notes, a level of the tree).
  document.addEventListener("htmx:load", function (event) { localise(event.detail.elt); });

  // "/" focuses the search box of the top bar (issue 10), unless the visitor is typing.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) {
      return;
    }
    var target = event.target;
    var typing = target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
    var box = document.getElementById("search-box");
    if (!typing && box) {
      event.preventDefault();
      box.focus();
    }
  });
})();

/* The type-ahead of the top bar's search box (templates/search/results.html, block
 * "suggestions"), the ARIA combobox pattern: focus stays in the box; ArrowDown/ArrowUp move
 * the active suggestion (aria-activedescendant, wrapping around), Enter opens it, Esc closes
 * the list and keeps the term. Without an active suggestion Enter submits the search. */
(function () {
  "use strict";

  function listOpen() {
    return document.getElementById("search-suggest-list") !== null;
  }

  function suggestions() {
    return Array.prototype.slice.call(document.querySelectorAll(
      "#search-suggest-list a[role=option]"));
  }

  // The box says whether its list is shown; a new list starts with nothing active.
  function reflect(box) {
    box.setAttribute("aria-expanded", listOpen() ? "true" : "false");
    box.removeAttribute("aria-activedescendant");
  }

  function activate(box, options, index) {
    options.forEach(function (option, at) {
      option.setAttribute("aria-selected", at === index ? "true" : "false");
    });
    box.setAttribute("aria-activedescendant", options[index].id);
    options[index].scrollIntoView({ block: "nearest" });
  }

  function close(box) {
    if (window.htmx) {
      window.htmx.trigger(box, "htmx:abort");  // an answer still on its way stays closed
    }
    document.getElementById("search-suggest").replaceChildren();
    reflect(box);
    box.focus();
  }

  document.addEventListener("htmx:afterSwap", function (event) {
    var box = document.getElementById("search-box");
    if (box && event.detail.target && event.detail.target.id === "search-suggest") {
      reflect(box);
    }
  });

  document.addEventListener("keydown", function (event) {
    var box = event.target;
    if (!box || box.id !== "search-box" || event.altKey || event.ctrlKey || event.metaKey) {
      return;
    }
    var options = suggestions();
    var current = options.map(function (option) { return option.id; })
      .indexOf(box.getAttribute("aria-activedescendant"));
    if ((event.key === "ArrowDown" || event.key === "ArrowUp") && options.length) {
      event.preventDefault();
      var step = event.key === "ArrowDown" ? 1 : -1;
      var start = current < 0 ? (step > 0 ? -1 : 0) : current;
      activate(box, options, (start + step + options.length) % options.length);
    } else if (event.key === "Enter" && current >= 0) {
      event.preventDefault();
      window.location.assign(options[current].href);  // each suggestion is a link
    } else if (event.key === "Escape" && listOpen()) {
      event.preventDefault();  // Esc in a search field would also clear the term
      close(box);
    }
  });
})();

/* Storage bench mode (templates/storage/bench.html): each scan's answer, refusals included,
 * is added to the list; the scan field is emptied and focused for the next scan. A button
 * marked data-print prints the page (label sheets). */
(function () {
  "use strict";

  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    var status = event.detail.xhr.status;
    if (status >= 400 && status < 500 && target && target.closest("[data-scan-results]")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  // After a scan, or a "Store anyway" in the list of answers, the scan field is ready again.
  document.addEventListener("htmx:afterRequest", function (event) {
    var form = event.detail.elt;
    if (!form || !form.matches) return;
    if (form.matches("[data-scan-form]")) form.querySelector("input[name=code]").value = "";
    else if (!form.closest("[data-scan-results]")) return;
    var field = document.getElementById("scan-code");
    if (field) field.focus();
  });

  document.addEventListener("click", function (event) {
    if (event.target.closest("[data-print]")) window.print();
  });
})();

/* The box grid of a location page (templates/storage/location.html): a free slot chosen
 * with a tap, click or Enter becomes the slot the one scan field stores into, without
 * reloading (it carries the highlight and the word "chosen"); the slot a link asked to see
 * (?slot=C4, aria-current) is scrolled into view and keeps its own mark. Without
 * JavaScript a free slot is a link that reloads the page with that slot chosen. */
(function () {
  "use strict";

  // The chosen slot is highlighted; the one the link asked for keeps a mark of its own.
  function mark(cell, chosen) {
    cell.classList.toggle("slot-highlight", chosen);
    cell.classList.toggle("slot-shown", !chosen && cell.hasAttribute("aria-current"));
    var word = cell.querySelector(".slot-state");
    if (word) word.textContent = chosen ? "chosen" : "free";
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest("[data-choose-slot]");
    var field = document.getElementById("slot-code");
    if (!link || !field) return;
    event.preventDefault();
    var position = link.getAttribute("data-choose-slot");
    document.getElementById("slot-position").value = position;
    document.getElementById("slot-chosen").textContent = "slot " + position;
    document.querySelectorAll(".box-grid .slot-highlight").forEach(function (old) {
      mark(old, false);
    });
    mark(link.closest("td"), true);
    field.focus();
  });

  document.addEventListener("DOMContentLoaded", function () {
    var shown = document.querySelector(".box-grid [aria-current]");
    if (shown) shown.scrollIntoView({ block: "nearest" });
  });
})();

/* Copy buttons (Data feeds page): a button with data-copy="ID" copies the value of input #ID
 * and reports it in the element with data-copy-status="ID". Without the Clipboard API (a page
 * not served over HTTPS or localhost) the input's text is selected for Ctrl+C instead. */
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-copy]") : null;
    if (!button) return;
    var id = button.getAttribute("data-copy");
    var input = document.getElementById(id);
    var status = document.querySelector('[data-copy-status="' + id + '"]');
    if (!input) return;
    function report(text) { if (status) status.textContent = text; }
    function selectIt() { input.focus(); input.select(); report("Selected: press Ctrl+C to copy."); }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(input.value).then(function () { report("Copied."); }, selectIt);
    } else {
      selectIt();
    }
  });
})();

/* Dashboard widgets (templates/dashboards/page.html): each widget body marked data-measure
 * asks for its content with its own width in CSS pixels (?width=), so a chart's view box is
 * as wide as the chart is shown and its text stays 12 px at any window width. When a body
 * becomes narrower than it was drawn for (its text would shrink), or wider by more than a
 * little, it asks again through the "widget-resized" trigger; until then the chart scales. */
(function () {
  "use strict";

  var SLACK = 16;  // pixels of widening not worth a new request
  var drawnAt = new WeakMap();

  function widthOf(body) { return Math.floor(body.clientWidth); }

  document.addEventListener("htmx:configRequest", function (event) {
    var body = event.detail.elt;
    if (!body || !body.matches || !body.matches("[data-measure]")) return;
    var width = widthOf(body);
    if (width > 0) {
      event.detail.parameters.width = width;
      drawnAt.set(body, width);
    }
  });

  if (!window.ResizeObserver) return;
  var waiting = null;
  var observer = new ResizeObserver(function () {
    clearTimeout(waiting);
    waiting = setTimeout(function () {
      document.querySelectorAll("[data-measure]").forEach(function (body) {
        var drawn = drawnAt.get(body);
        var width = widthOf(body);
        if (drawn !== undefined && (width < drawn || width > drawn + SLACK) && window.htmx) {
          window.htmx.trigger(body, "widget-resized");
        }
      });
    }, 200);
  });
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-measure]").forEach(function (body) {
      observer.observe(body);
    });
  });
})();

/* Logging out leaves the page: the answers of htmx requests still on their way are left
 * alone from then on. A dashboard widget whose request reached the server after the logout
 * had ended the login is refused with HX-Redirect to the login page; following it cancelled
 * the logout's own answer, and with it the "logged out" message and the offer to sign out
 * of the sign-in service too (a shared bench computer would stay signed in there). */
(function () {
  "use strict";

  var loggingOut = false;

  document.addEventListener("submit", function (event) {
    if (!event.defaultPrevented && event.target.matches("[data-ends-login]")) loggingOut = true;
  });
  document.addEventListener("htmx:beforeOnLoad", function (event) {
    if (loggingOut) event.preventDefault();
  });
  window.addEventListener("pageshow", function () { loggingOut = false; });
})();
