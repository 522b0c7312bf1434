; JavaScript: definitions, calls, bases, imports. Test blocks (it/test/describe with a
; callback) are captured as definitions; the hooks keep them only in test files.
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(class_declaration name: (identifier) @name) @definition.class
(method_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.method
(field_definition property: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @definition.method

; const f = () => …, const f = function () {…} (module level or exported)
(program (lexical_declaration (variable_declarator name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function))
(program (variable_declaration (variable_declarator name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function))
(program (export_statement declaration: (lexical_declaration (variable_declarator name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function)))

; a module-level const holding an object with methods (export const provider = { get() {…} }):
; the hooks keep it when it has methods, and its methods are qualified by it
(program (lexical_declaration (variable_declarator name: (identifier) @name value: (object)) @definition.constant))
(program (export_statement declaration: (lexical_declaration (variable_declarator name: (identifier) @name
  value: (object)) @definition.constant)))

; module-level constants (UPPER_CASE, not functions)
(program (lexical_declaration (variable_declarator name: (identifier) @name)) @definition.constant)
(program (export_statement declaration: (lexical_declaration (variable_declarator name: (identifier) @name)) @definition.constant))
; any other exported const whose value is no function (export const asyncScheduler = new
; AsyncScheduler(…), export const flatMap = mergeMap): kept by its name and type
(program (export_statement declaration: (lexical_declaration (variable_declarator name: (identifier) @name
  value: [(identifier) (call_expression) (new_expression) (member_expression) (subscript_expression) (string) (template_string) (number) (array) (object) (true) (false) (null) (undefined) (binary_expression) (ternary_expression) (unary_expression) (regex)]) @definition.constant)))

; test blocks, named by their title as written, quotes included (so `describe('Repo')` never
; collides with the class Repo)
(call_expression
  function: (identifier) @_fn (#any-of? @_fn "it" "test" "describe" "suite" "context" "specify")
  arguments: (arguments . [(string) (template_string)] @name
                         [(arrow_function) (function_expression)])) @definition.test

(call_expression function: (_) @callee) @reference.call
(new_expression constructor: (_) @callee) @reference.new

(class_declaration (class_heritage (_) @inherit))

(import_statement) @import
(export_statement source: (_)) @import
(export_statement "default") @import
(program (export_statement (export_clause))) @import
(program (lexical_declaration (variable_declarator value: (call_expression function: (identifier) @_req (#eq? @_req "require")))) @import)
(program (variable_declaration (variable_declarator value: (call_expression function: (identifier) @_req (#eq? @_req "require")))) @import)
(program (expression_statement (assignment_expression
  left: (member_expression object: (identifier) @_m (#eq? @_m "module") property: (property_identifier) @_e (#eq? @_e "exports"))
  right: (identifier))) @import)
