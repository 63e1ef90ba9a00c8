/* The dashboard editor (templates/dashboards/editor.html), on top of a form that works without
 * JavaScript: each card keeps its position and size in the inputs w<n>-x|y|cols|rows, which
 * this file keeps in sync while the card is arranged on a 12-column grid.
 *
 * - Drag a card by its name to move it, by its lower right corner to resize it (pointer
 *   events); a focused name moves with the arrow keys and resizes with Shift+arrows. Each
 *   change is announced in #grid-status; a card never gets narrower than its kind allows
 *   (data-min-cols), and cards it lands on move down out of its way. A card goes no lower
 *   than just below the others, and rows no card covers are closed up (as the page draws
 *   them, labapp/dashboards/layout.py), so no band of empty grid opens above Save.
 * - A chart the server widened to its kind's minimum (data-widened: saved narrower by an
 *   earlier client) moves down the cards it now covers.
 * - "Settings" opens the card's <dialog> (only that kind's fields); "Add widget" adds a card
 *   of the chosen kind (from its <template>) and opens its settings; "Remove" hides a card
 *   and ticks its w<n>-remove box, with an Undo.
 * - The share lists (select[data-picker]) become searchable pickers (static/picker.js).
 * - A card the server refused (data-open-settings: a setting is wrong) opens its dialog.
 * Positions are set through the CSSOM (element.style), which the page's CSP allows.
 */
(function () {
  "use strict";

  var form = document.querySelector("[data-dashboard-editor]");
  if (!form) return;
  var COLUMNS = parseInt(form.getAttribute("data-grid-columns"), 10) || 12;
  var MAX_Y = 1000;
  var MAX_ROWS = 50;
  var grid = document.getElementById("editor-grid");
  var status = document.getElementById("grid-status");
  var undoBar = document.getElementById("undo-bar");
  form.classList.add("enhanced");
  // A card growing under the pointer must not scroll the page (Chromium's scroll anchoring
  // would keep what is below the grid in place, moving the grid away from the pointer; the
  // body's property is the one that counts for the page).
  document.documentElement.style.overflowAnchor = "none";
  document.body.style.overflowAnchor = "none";

  function clamp(value, low, high) { return Math.max(low, Math.min(high, value)); }

  function cards() {
    return Array.prototype.slice.call(grid.querySelectorAll(".editor-widget:not([hidden])"));
  }

  function input(card, key) {
    return document.getElementById(card.getAttribute("data-prefix") + "-" + key);
  }

  function minCols(card) { return parseInt(card.getAttribute("data-min-cols"), 10) || 1; }

  function nameOf(card) { return input(card, "title").textContent.trim(); }

  // The card's box as its inputs say, made to fit the grid (a value typed wrong reads as 0).
  function read(card) {
    function number(key, fallback) {
      var value = parseInt(input(card, key).value, 10);
      return isNaN(value) ? fallback : value;
    }
    var cols = clamp(number("cols", minCols(card)), minCols(card), COLUMNS);
    return { x: clamp(number("x", 0), 0, COLUMNS - cols), y: clamp(number("y", 0), 0, MAX_Y),
             cols: cols, rows: clamp(number("rows", 4), 1, MAX_ROWS) };
  }

  function place(card, box) {
    card.style.gridColumn = (box.x + 1) + " / span " + box.cols;
    card.style.gridRow = (box.y + 1) + " / span " + box.rows;
  }

  function write(card, box) {
    ["x", "y", "cols", "rows"].forEach(function (key) { input(card, key).value = box[key]; });
    input(card, "where").textContent = "Column " + (box.x + 1) + ", row " + (box.y + 1) + "; " +
      box.cols + " × " + box.rows + " cells";
    place(card, box);
  }

  // The row below the lowest card, leaving ``except`` out.
  function bottom(except) {
    return cards().reduce(function (low, card) {
      if (card === except) return low;
      var box = read(card);
      return Math.max(low, box.y + box.rows);
    }, 0);
  }

  // As many rows as the cards cover.
  function fitRows() {
    grid.style.gridTemplateRows = "repeat(" + Math.max(bottom(null), 1) + ", 3.5rem)";
    document.getElementById("grid-empty").hidden = cards().length > 0;
  }

  // Rows no card covers are removed: the cards below them move up.
  function closeUp() {
    var boxes = cards().map(function (card) { return { card: card, box: read(card) }; });
    var covered = {};
    boxes.forEach(function (item) {
      for (var row = item.box.y; row < item.box.y + item.box.rows; row++) covered[row] = true;
    });
    boxes.forEach(function (item) {
      var empty = 0;
      for (var row = 0; row < item.box.y; row++) if (!covered[row]) empty++;
      if (empty) {
        item.box.y -= empty;
        write(item.card, item.box);
      }
    });
  }

  function overlap(a, b) {
    return a.x < b.x + b.cols && b.x < a.x + a.cols && a.y < b.y + b.rows && b.y < a.y + a.rows;
  }

  // Cards under the moved one go down below it, and so on for the cards they land on.
  function makeRoom(moved) {
    var queue = [moved];
    while (queue.length) {
      var card = queue.shift();
      var box = read(card);
      cards().forEach(function (other) {
        if (other === card) return;
        var below = read(other);
        if (!overlap(box, below)) return;
        below.y = box.y + box.rows;
        write(other, below);
        queue.push(other);
      });
    }
  }

  // After a change: cards out of the way, empty rows closed, then said where it ended.
  function settle(card, say) {
    makeRoom(card);
    closeUp();
    fitRows();
    status.textContent = say(card);
  }

  function moved(card) {
    var box = read(card);
    return nameOf(card) + " moved to column " + (box.x + 1) + ", row " + (box.y + 1);
  }

  function resized(card) {
    var box = read(card);
    return nameOf(card) + " resized to " + box.cols + " columns by " + box.rows + " rows";
  }

  // ---- Dragging: by the name to move, by the corner to resize ----
  function cellAt(event) {
    var rect = grid.getBoundingClientRect();
    var style = getComputedStyle(grid);
    var gap = parseFloat(style.columnGap) || 0;
    var rowGap = parseFloat(style.rowGap) || 0;
    var width = (rect.width - gap * (COLUMNS - 1)) / COLUMNS;
    var height = parseFloat(style.gridTemplateRows) || 56;
    return { col: Math.floor((event.clientX - rect.left) / (width + gap)),
             row: Math.floor((event.clientY - rect.top) / (height + rowGap)) };
  }

  var drag = null;

  grid.addEventListener("pointerdown", function (event) {
    var handle = event.target.closest("[data-handle], [data-resize]");
    if (!handle || event.button !== 0) return;
    var card = handle.closest(".editor-widget");
    drag = { card: card, resize: handle.hasAttribute("data-resize"), start: cellAt(event),
             box: read(card), x: event.clientX, y: event.clientY, active: false };
    handle.setPointerCapture(event.pointerId);
    if (drag.resize) event.preventDefault();
  });

  grid.addEventListener("pointermove", function (event) {
    if (!drag) return;
    if (!drag.active && Math.abs(event.clientX - drag.x) + Math.abs(event.clientY - drag.y) < 5) {
      return;
    }
    drag.active = true;
    drag.card.classList.add("dragging");
    var cell = cellAt(event);
    var box = { x: drag.box.x, y: drag.box.y, cols: drag.box.cols, rows: drag.box.rows };
    if (drag.resize) {
      box.cols = clamp(cell.col - box.x + 1, minCols(drag.card), COLUMNS - box.x);
      box.rows = clamp(cell.row - box.y + 1, 1, MAX_ROWS);
    } else {
      box.x = clamp(box.x + cell.col - drag.start.col, 0, COLUMNS - box.cols);
      box.y = clamp(box.y + cell.row - drag.start.row, 0, Math.min(bottom(drag.card), MAX_Y));
    }
    write(drag.card, box);
    fitRows();
  });

  function endDrag() {
    if (!drag) return;
    var done = drag;
    drag = null;
    done.card.classList.remove("dragging");
    if (done.active) settle(done.card, done.resize ? resized : moved);
  }
  grid.addEventListener("pointerup", endDrag);
  grid.addEventListener("pointercancel", endDrag);

  // ---- Keyboard: arrows move the focused card, Shift+arrows resize it ----
  var STEPS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };

  grid.addEventListener("keydown", function (event) {
    var step = STEPS[event.key];
    var handle = event.target.closest("[data-handle]");
    if (!step || !handle || event.altKey || event.ctrlKey || event.metaKey) return;
    event.preventDefault();
    var card = handle.closest(".editor-widget");
    var box = read(card);
    if (event.shiftKey) {
      box.cols = clamp(box.cols + step[0], minCols(card), COLUMNS - box.x);
      box.rows = clamp(box.rows + step[1], 1, MAX_ROWS);
    } else {
      box.x = clamp(box.x + step[0], 0, COLUMNS - box.cols);
      box.y = clamp(box.y + step[1], 0, Math.min(bottom(card), MAX_Y));
    }
    write(card, box);
    settle(card, event.shiftKey ? resized : moved);
  });

  // ---- Settings dialogs ----
  function openSettings(card) {
    var dialog = document.getElementById(card.getAttribute("data-prefix") + "-dialog");
    if (dialog && !dialog.open) dialog.showModal();
  }

  form.addEventListener("click", function (event) {
    var opener = event.target.closest("[data-settings]");
    if (opener) openSettings(opener.closest(".editor-widget"));
    var done = event.target.closest("[data-close-dialog]");
    if (done) done.closest("dialog").close();
  });

  // The card's name follows its heading (or its kind when the heading is empty; the kind is
  // said next to a heading).
  form.addEventListener("input", function (event) {
    if (!event.target.matches("[data-heading]")) return;
    var card = event.target.closest(".editor-widget");
    input(card, "title").textContent = event.target.value.trim() || event.target.placeholder;
    card.querySelector("[data-kind]").hidden = !event.target.value.trim();
  });

  // ---- Add and remove ----
  function nextNumber() {
    return grid.querySelectorAll(".editor-widget").length === 0 ? 0 :
      Math.max.apply(null, Array.prototype.map.call(grid.querySelectorAll(".editor-widget"),
        function (card) { return parseInt(card.getAttribute("data-prefix").slice(1), 10); })) + 1;
  }

  document.getElementById("add-widget").addEventListener("click", function (event) {
    var kind = document.getElementById("add-kind").value;
    var template = document.getElementById("widget-template-" + kind);
    if (!template) return;  // posts: the server adds the card
    event.preventDefault();
    var below = bottom(null);
    grid.insertAdjacentHTML("beforeend", template.innerHTML.split("__N__").join(nextNumber()));
    var card = grid.lastElementChild;
    var box = read(card);
    box.y = below;
    write(card, box);
    fitRows();
    status.textContent = nameOf(card) + " added at column 1, row " + (below + 1);
    openSettings(card);
  });

  function removeCard(card) {
    input(card, "remove").checked = true;
    card.hidden = true;
    closeUp();
    fitRows();
    undoBar.textContent = "";
    undoBar.appendChild(document.createTextNode("Removed " + nameOf(card) + ". "));
    var undo = document.createElement("button");
    undo.type = "button";
    undo.className = "button-secondary";
    undo.id = "undo-remove";
    undo.textContent = "Undo";
    undo.addEventListener("click", function () {
      input(card, "remove").checked = false;
      card.hidden = false;
      undoBar.textContent = "";
      makeRoom(card);
      closeUp();
      fitRows();
      input(card, "title").focus();
    });
    undoBar.appendChild(undo);
    undo.focus();
  }

  form.addEventListener("click", function (event) {
    var button = event.target.closest("[data-remove-widget]");
    if (button) removeCard(button.closest(".editor-widget"));
  });


  // ---- Start: place the cards, open the settings the server refused ----
  cards().forEach(function (card) { place(card, read(card)); });
  form.querySelectorAll(".editor-widget[data-widened]").forEach(makeRoom);
  closeUp();
  fitRows();
  var refused = form.querySelector(".editor-widget[data-open-settings]");
  if (refused) openSettings(refused);
  else {
    var wrong = form.querySelector(".editor-widget.has-error");
    if (wrong) input(wrong, "title").focus();
  }
})();
