"""What every stage speaks: findings and spans, source lines, digests, the rule catalogue
(codes, names, selection) and the tables of API names.  Imports nothing of gradlint but the
package root.

Kept empty: importing a stage imports nothing else (docs/development.md, "The pipeline").
"""
