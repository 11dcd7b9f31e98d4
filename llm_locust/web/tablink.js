/* llm-locust, injected into Locust's own web UI: Locust renders the cells of an extension's
   tab as plain text, so this turns the "Charts: open /llm" cell of the LLM tab into a link.
   React keeps its own (now empty) text node; the link is a sibling, added again whenever
   React renders the table anew. */
"use strict";
(function () {
  const TEXT = "Charts: open /llm";

  function linkify() {
    for (const td of document.querySelectorAll("td")) {
      if (td.textContent !== TEXT || td.querySelector("a.llm-locust-link")) continue;
      for (const node of td.childNodes) if (node.nodeType === Node.TEXT_NODE) node.nodeValue = "";
      const a = document.createElement("a");
      a.className = "llm-locust-link";
      a.href = "llm";
      a.textContent = TEXT;
      td.appendChild(a);
    }
  }

  new MutationObserver(linkify).observe(document.documentElement, { childList: true, subtree: true });
  linkify();
})();
