;;; eglot_driver.el --- plays the user of Emacs + eglot on `gradlint lsp'  -*- lexical-binding: t -*-
;; Loaded after docs/editors.md's snippet (init.el), in `emacs --batch': opens
;; $GRADLINT_FILE, starts eglot the way `M-x eglot' does, waits for flymake's
;; diagnostics, applies the first quick fix through eglot's own code-action
;; code, waits for the re-check, and writes what it saw as JSON to
;; $GRADLINT_EMACS_OUT.
(require 'eglot)
(require 'json)

(defvar gl-out (getenv "GRADLINT_EMACS_OUT"))

(defun gl-wait (predicate seconds)
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (when (bound-and-true-p flymake-mode) (flymake-start))
      (accept-process-output nil 0.05))
    (funcall predicate)))

(defun gl-position (pos)
  (save-excursion
    (goto-char pos)
    (list (1- (line-number-at-pos)) (current-column))))

(defun gl-diagnostics ()
  (mapcar (lambda (d)
            (let ((beg (gl-position (flymake-diagnostic-beg d)))
                  (end (gl-position (flymake-diagnostic-end d))))
              `((lnum . ,(car beg)) (col . ,(cadr beg))
                (end_lnum . ,(car end)) (end_col . ,(cadr end))
                (message . ,(flymake-diagnostic-text d)))))
          (flymake-diagnostics)))

(defun gl-finish (result)
  (with-temp-file gl-out (insert (json-encode result)))
  (kill-emacs 0))

(condition-case err
    (let (result)
      (find-file (getenv "GRADLINT_FILE"))
      (python-mode)
      (setq eglot-sync-connect 10)
      (apply #'eglot (eglot--guess-contact))
      (unless (gl-wait (lambda () (flymake-diagnostics)) 30)
        (gl-finish `((error . "no diagnostics within the timeout"))))
      (push `(before . ,(vconcat (gl-diagnostics))) result)
      (let* ((first (car (flymake-diagnostics)))
             (actions (eglot-code-actions (flymake-diagnostic-beg first) (flymake-diagnostic-end first))))
        (push `(actions . ,(vconcat (mapcar (lambda (a) (plist-get a :title)) actions))) result)
        (push `(applied . ,(plist-get (car actions) :title)) result)
        ;; one action and a kind: eglot applies it without asking
        (eglot--read-execute-code-action (list (car actions)) (eglot--current-server-or-lose) "quickfix"))
      (push `(buffer . ,(buffer-substring-no-properties (point-min) (point-max))) result)
      (gl-wait (lambda () (null (flymake-diagnostics))) 30)
      (push `(after . ,(vconcat (gl-diagnostics))) result)
      (gl-finish result))
  (error (gl-finish `((error . ,(format "%S" err))))))
