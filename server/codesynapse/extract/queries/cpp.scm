; C++: namespaces, classes/structs/enums, functions and methods (inline, declared in the class
; body, out of line as T::m), GoogleTest TEST(Suite, Name), calls, new, bases, #include.
(namespace_definition name: (namespace_identifier) @name) @definition.module
(class_specifier name: (type_identifier) @name body: (_)) @definition.class
(struct_specifier name: (type_identifier) @name body: (_)) @definition.struct
(enum_specifier name: (type_identifier) @name body: (_)) @definition.enum

(function_definition declarator: (function_declarator
  declarator: [(identifier) (field_identifier) (destructor_name) (operator_name)] @name
  (#not-match? @name "^TEST(_F|_P)?$"))) @definition.function
(function_definition declarator: (function_declarator
  declarator: (qualified_identifier name: [(identifier) (destructor_name) (operator_name)] @name))) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator
  declarator: [(identifier) (field_identifier)] @name))) @definition.function
(function_definition declarator: (reference_declarator (function_declarator
  declarator: [(identifier) (field_identifier)] @name))) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator
  declarator: (qualified_identifier name: (identifier) @name)))) @definition.function

; methods and constructors declared in a class body
(field_declaration_list (field_declaration declarator: (function_declarator
  declarator: [(field_identifier) (destructor_name) (operator_name)] @name)) @definition.method)
(field_declaration_list (declaration declarator: (function_declarator
  declarator: [(identifier) (destructor_name)] @name)) @definition.method)

; GoogleTest: TEST(Suite, Name) { … } is named Suite.Name
(function_definition declarator: (function_declarator
  declarator: (identifier) @_t (#any-of? @_t "TEST" "TEST_F" "TEST_P")
  parameters: (parameter_list (parameter_declaration type: (_) @name) (parameter_declaration type: (_) @name)))) @definition.test

(preproc_def name: (identifier) @name value: (_)) @definition.constant

(call_expression function: (_) @callee) @reference.call
(new_expression type: (_) @callee) @reference.new

(base_class_clause [(type_identifier) (qualified_identifier) (template_type)] @inherit)

(preproc_include) @import
