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

// Search without accents: the index holds each word with its accents folded before stemming (conf.py's
// fold_accents), so the query is folded the same way before Sphinx's stemmer sees it ("mascara" finds "máscara").
const foldAccents = (word) => word.normalize("NFD").replace(/[\u0300-\u036f]/g, "");
function accentFreeStemmer() {
  if (typeof window.Stemmer !== "function" || window.Stemmer.accentFree) return;
  const Base = window.Stemmer;
  const Folded = function () {
    const base = new Base();
    this.stemWord = (word) => base.stemWord(foldAccents(word));
  };
  Folded.accentFree = true;
  window.Stemmer = Folded;
}
accentFreeStemmer();
document.addEventListener("DOMContentLoaded", accentFreeStemmer);

// sphinx-copybutton has no Portuguese words: give it the page's language's (its `messages` and `locale` are globals
// of copybutton.js, read when the buttons are drawn, after this file has run).
const COPY_WORDS = {
  "pt-BR": {copy: "Copiar", copy_to_clipboard: "Copiar para a área de transferência", copy_success: "Copiado!",
            copy_failure: "Não foi possível copiar"},
};
if (typeof messages !== "undefined" && COPY_WORDS[document.documentElement.lang]) {
  messages[document.documentElement.lang] = COPY_WORDS[document.documentElement.lang];
  locale = document.documentElement.lang;
}
