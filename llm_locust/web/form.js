/* llm-locust, injected into Locust's own page ahead of its React bundle (runtime/form.py).

   Locust lists an extension's start-form fields alphabetically (Flask sorts the page's
   JSON) under one-line labels "Name (help text)" that are cut off at the field's edge.
   Before the bundle reads window.templateArgs this puts llm-locust's fields in the order of
   `llm-locust run --help` and leaves their labels to the name; once React has drawn the
   form it adds each section's heading above its first field and each field's whole help
   (flag, text, default) under it. window.llmLocustForm (written by the server from the option
   table) says the sections, their fields and the help. Fields of other extensions keep their
   place after ours. */
"use strict";
(function () {
  const layout = window.llmLocustForm;
  const args = window.templateArgs;
  if (!layout || !args || !args.extra_options) return;

  const extra = args.extra_options;
  const ordered = {};
  for (const section of layout.sections) {
    for (const name of section.fields) {
      if (name in extra) ordered[name] = Object.assign({}, extra[name], { help_text: "" });
    }
  }
  for (const name of Object.keys(extra)) if (!(name in ordered)) ordered[name] = extra[name];
  args.extra_options = ordered;

  const camel = (name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

  function box(name) {
    const input = document.querySelector(`form [name="${camel(name)}"]`);
    return input && input.closest(".MuiFormControl-root, .MuiFormControlLabel-root");
  }

  function decorate() {
    for (const section of layout.sections) {
      let first = true;
      for (const name of section.fields) {
        const field = box(name);
        if (!field) continue;
        field.dataset.llmSection = section.title;
        const before = field.previousElementSibling;
        if (first && !(before && before.dataset.llmHeading === section.title)) {
          const heading = document.createElement("h3");
          heading.className = "llm-locust-section";
          heading.dataset.llmHeading = section.title;
          heading.textContent = section.title;
          field.before(heading);
        }
        first = false;
        const after = field.nextElementSibling;
        if (!(after && after.dataset.llmHelp === name)) {
          const help = document.createElement("p");
          help.className = "llm-locust-help";
          help.dataset.llmHelp = name;
          help.textContent = layout.help[name] || "";
          field.after(help);
        }
      }
    }
  }

  const style = document.createElement("style");
  style.textContent =
    ".llm-locust-section{margin:12px 0 -16px;font:600 15px/1.3 sans-serif;border-bottom:1px solid #8884;" +
    "padding-bottom:4px}.llm-locust-section::first-letter{text-transform:uppercase}" +
    ".llm-locust-help{margin:-26px 0 0 2px;font:12px/1.4 sans-serif;opacity:.75;white-space:normal;" +
    "overflow-wrap:anywhere}";
  document.head.appendChild(style);
  new MutationObserver(decorate).observe(document.documentElement, { childList: true, subtree: true });
})();
