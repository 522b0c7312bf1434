; C: function definitions, file-scope types and constants (also inside #if/#ifdef blocks such
; as include guards), calls, #include. File scope is spelled out per parent so that a
; `typedef struct tag {…} name` yields one struct (named by the typedef), not two.
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.function
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))) @definition.function

(translation_unit [(struct_specifier name: (type_identifier) @name body: (_)) (union_specifier name: (type_identifier) @name body: (_))] @definition.struct)
(translation_unit (enum_specifier name: (type_identifier) @name body: (_)) @definition.enum)
(translation_unit (declaration type: (struct_specifier name: (type_identifier) @name body: (_))) @definition.struct)
(preproc_ifdef [(struct_specifier name: (type_identifier) @name body: (_)) (union_specifier name: (type_identifier) @name body: (_))] @definition.struct)
(preproc_ifdef (enum_specifier name: (type_identifier) @name body: (_)) @definition.enum)
(preproc_ifdef (declaration type: (struct_specifier name: (type_identifier) @name body: (_))) @definition.struct)
(preproc_if [(struct_specifier name: (type_identifier) @name body: (_)) (union_specifier name: (type_identifier) @name body: (_))] @definition.struct)
(preproc_if (enum_specifier name: (type_identifier) @name body: (_)) @definition.enum)
(preproc_if (declaration type: (struct_specifier name: (type_identifier) @name body: (_))) @definition.struct)
(preproc_else [(struct_specifier name: (type_identifier) @name body: (_)) (union_specifier name: (type_identifier) @name body: (_))] @definition.struct)
(preproc_else (enum_specifier name: (type_identifier) @name body: (_)) @definition.enum)
(preproc_else (declaration type: (struct_specifier name: (type_identifier) @name body: (_))) @definition.struct)
(preproc_elif [(struct_specifier name: (type_identifier) @name body: (_)) (union_specifier name: (type_identifier) @name body: (_))] @definition.struct)
(preproc_elif (enum_specifier name: (type_identifier) @name body: (_)) @definition.enum)
(preproc_elif (declaration type: (struct_specifier name: (type_identifier) @name body: (_))) @definition.struct)
; typedef struct {…} name; / typedef struct tag {…} name; are named by the typedef
(type_definition type: [(struct_specifier body: (_)) (union_specifier body: (_))] declarator: (type_identifier) @name) @definition.struct
(type_definition type: (enum_specifier body: (_)) declarator: (type_identifier) @name) @definition.enum
(type_definition type: [(primitive_type) (type_identifier) (sized_type_specifier) (struct_specifier !body) (union_specifier !body) (enum_specifier !body)] declarator: (type_identifier) @name) @definition.type

; constants: #define NAME value (not include guards) and const file-scope variables
(preproc_def name: (identifier) @name value: (_)) @definition.constant
(declaration (type_qualifier) declarator: (init_declarator declarator: [(identifier) @name (array_declarator declarator: (identifier) @name)])) @definition.constant

(call_expression function: (_) @callee) @reference.call

(preproc_include) @import
