// The reference-program editor: CodeMirror 6 over a plain <textarea data-code-editor>.
// Built into static/vendor/codemirror/editor.bundle.js by scripts/vendor_js.sh.
// Without JavaScript the textarea stays a textarea; with it, the editor writes every
// change back to the textarea so forms, htmx and the preview post the same field.
// Keyboard: Tab indents, Shift-Tab dedents; Escape then Tab leaves the editor.
import { EditorState } from "@codemirror/state";
import { EditorView, keymap, lineNumbers, highlightActiveLine, drawSelection } from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { indentOnInput, bracketMatching, syntaxHighlighting, defaultHighlightStyle, indentUnit } from "@codemirror/language";
import { python } from "@codemirror/lang-python";

function attach(textarea) {
  const label = textarea.getAttribute("aria-label") || (textarea.labels && textarea.labels[0] ? textarea.labels[0].textContent : "Code");
  const view = new EditorView({
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        lineNumbers(), history(), drawSelection(), highlightActiveLine(), indentOnInput(), bracketMatching(),
        indentUnit.of("    "), python(), syntaxHighlighting(defaultHighlightStyle),
        keymap.of([indentWithTab, ...defaultKeymap, ...historyKeymap]),
        EditorView.contentAttributes.of({ "aria-label": label.trim(), "aria-describedby": textarea.id + "-keys" }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) {
            textarea.value = update.state.doc.toString();
            textarea.dispatchEvent(new Event("input", { bubbles: true }));
          }
        }),
      ],
    }),
  });
  textarea.classList.add("cm-hidden-source");
  textarea.setAttribute("tabindex", "-1");
  textarea.setAttribute("aria-hidden", "true");
  textarea.after(view.dom);
  view.dom.dataset.editorFor = textarea.id;
  const toggle = document.querySelector(`button[data-plain-toggle="${textarea.id}"]`);
  if (toggle) {
    toggle.hidden = false;
    toggle.addEventListener("click", () => {
      const plain = !textarea.classList.contains("cm-hidden-source");
      if (plain) {  // back to the editor, with what was typed in the textarea
        view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: textarea.value } });
        textarea.classList.add("cm-hidden-source");
        textarea.setAttribute("tabindex", "-1");
        textarea.setAttribute("aria-hidden", "true");
        view.dom.hidden = false;
        toggle.textContent = "Use a plain text box";
        view.focus();
      } else {
        textarea.classList.remove("cm-hidden-source");
        textarea.removeAttribute("tabindex");
        textarea.removeAttribute("aria-hidden");
        view.dom.hidden = true;
        toggle.textContent = "Use the code editor";
        textarea.focus();
      }
    });
  }
  return view;
}

window.codeEditors = Array.from(document.querySelectorAll("textarea[data-code-editor]")).map(attach);
