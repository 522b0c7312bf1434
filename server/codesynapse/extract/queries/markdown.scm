; Markdown: headings (docs.py walks the tree itself; this query only has to compile).
(atx_heading) @heading
(setext_heading) @heading
