/* A searchable picker in place of a multiple <select> (the dashboard editor's sharing lists):
 * type to filter the options, choose with the mouse or the arrow keys and Enter, the chosen
 * ones shown as chips removable by their × button. The <select>, hidden, keeps the choice
 * and posts it, so the form works the same without JavaScript. Each change is announced in
 * the aria-live element named by the select's data-picker-status. data-picker names what
 * the select lists ("users", "departments"), for the placeholder and the announcements.
 * Every select[data-picker] of the page becomes one (templates/web/_share_pickers.html).
 */
(function () {
  "use strict";

  function picker(select) {
    var status = document.getElementById(select.getAttribute("data-picker-status"));
    var label = document.querySelector("label[for='" + select.id + "']");
    var noun = select.getAttribute("data-picker");
    var wrap = document.createElement("div");
    wrap.className = "picker";
    var chips = document.createElement("ul");
    chips.className = "chips";
    chips.setAttribute("aria-label", "Chosen " + noun);
    var box = document.createElement("input");
    box.id = select.id + "-search";
    box.type = "text";
    box.autocomplete = "off";
    box.placeholder = "Type to find " + noun;
    box.setAttribute("role", "combobox");
    box.setAttribute("aria-autocomplete", "list");
    box.setAttribute("aria-expanded", "false");
    var list = document.createElement("ul");
    list.className = "picker-options";
    list.id = select.id + "-options";
    list.setAttribute("role", "listbox");
    list.setAttribute("aria-label", label.textContent);
    list.hidden = true;
    box.setAttribute("aria-controls", list.id);
    label.htmlFor = box.id;
    select.hidden = true;
    select.style.display = "none";  // whatever display a stylesheet gives selects
    wrap.appendChild(chips);
    wrap.appendChild(box);
    wrap.appendChild(list);
    select.parentNode.insertBefore(wrap, select);

    function drawChips() {
      chips.textContent = "";
      Array.prototype.forEach.call(select.options, function (option) {
        if (!option.selected) return;
        var chip = document.createElement("li");
        chip.className = "chip";
        chip.appendChild(document.createTextNode(option.textContent));
        var remove = document.createElement("button");
        remove.type = "button";
        remove.textContent = "×";
        remove.setAttribute("aria-label", "Remove " + option.textContent);
        remove.addEventListener("click", function () {
          option.selected = false;
          drawChips();
          status.textContent = option.textContent + " removed from " + noun;
          box.focus();
        });
        chip.appendChild(remove);
        chips.appendChild(chip);
      });
      chips.hidden = chips.children.length === 0;
    }

    function close() {
      list.hidden = true;
      box.setAttribute("aria-expanded", "false");
      box.removeAttribute("aria-activedescendant");
    }

    function choose(option) {
      option.selected = true;
      box.value = "";
      close();
      drawChips();
      status.textContent = option.textContent + " added to " + noun;
      box.focus();
    }

    function draw() {
      var term = box.value.trim().toLowerCase();
      list.textContent = "";
      Array.prototype.forEach.call(select.options, function (option, index) {
        if (option.selected || option.textContent.toLowerCase().indexOf(term) < 0) return;
        var item = document.createElement("li");
        item.id = list.id + "-" + index;
        item.setAttribute("role", "option");
        item.setAttribute("aria-selected", "false");
        item.textContent = option.textContent;
        item.addEventListener("mousedown", function (event) { event.preventDefault(); });
        item.addEventListener("click", function () { choose(option); });
        item.option = option;
        list.appendChild(item);
      });
      if (!list.children.length) {
        var none = document.createElement("li");
        none.textContent = "No " + noun + " match";
        none.setAttribute("aria-disabled", "true");
        none.setAttribute("role", "option");
        list.appendChild(none);
      }
      list.hidden = false;
      box.setAttribute("aria-expanded", "true");
      box.removeAttribute("aria-activedescendant");
    }

    box.addEventListener("input", draw);
    box.addEventListener("focus", draw);
    box.addEventListener("blur", close);
    box.addEventListener("keydown", function (event) {
      var items = Array.prototype.filter.call(list.children, function (item) { return item.option; });
      var current = items.map(function (item) { return item.id; })
        .indexOf(box.getAttribute("aria-activedescendant"));
      if ((event.key === "ArrowDown" || event.key === "ArrowUp") && items.length) {
        event.preventDefault();
        if (list.hidden) draw();
        var next = (current + (event.key === "ArrowDown" ? 1 : -1) + items.length) % items.length;
        items.forEach(function (item, at) {
          item.setAttribute("aria-selected", at === next ? "true" : "false");
        });
        box.setAttribute("aria-activedescendant", items[next].id);
        items[next].scrollIntoView({ block: "nearest" });
      } else if (event.key === "Enter" && !list.hidden) {
        event.preventDefault();  // never submits the form from the picker
        if (current >= 0) choose(items[current].option);
        else if (items.length === 1) choose(items[0].option);
      } else if (event.key === "Escape" && !list.hidden) {
        event.preventDefault();
        close();
      }
    });
    drawChips();
  }

  document.querySelectorAll("select[data-picker]").forEach(picker);
})();
