// The sidebar's fold toggles are icons only: give each a name a screen reader can say (axe-core: summary-name),
// in the page's language.
const FOLD_LABEL = {
  en: (name) => `Show or hide the pages under ${name || "this one"}`,
  pt: (name) => `Mostrar ou esconder as páginas de ${name || "esta"}`,
};
document.addEventListener("DOMContentLoaded", () => {
  const label = FOLD_LABEL[document.documentElement.lang.split("-")[0]] || FOLD_LABEL.en;
  for (const summary of document.querySelectorAll(".bd-sidenav details > summary")) {
    if (!summary.textContent.trim() && !summary.getAttribute("aria-label")) {
      const link = summary.parentElement.parentElement.querySelector(":scope > a");
      summary.setAttribute("aria-label", label(link ? link.textContent.trim() : ""));
    }
  }
});

// MyST-NB names each fold "Toggle hidden content" while it shows "Show the answer": let the visible words be its
// name (axe-core: label-content-name-mismatch).
document.addEventListener("DOMContentLoaded", () => {
  for (const summary of document.querySelectorAll("details.hide > summary[aria-label]")) {
    summary.removeAttribute("aria-label");
  }
});
