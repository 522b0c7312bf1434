; Ruby: classes, modules, methods, top-level constants, calls, Foo.new, mixins, requires,
; RSpec blocks (kept by the hooks only in *_spec.rb files).
(class name: (constant) @name) @definition.class
(class name: (scope_resolution name: (constant) @name)) @definition.class
(module name: (constant) @name) @definition.module
(module name: (scope_resolution name: (constant) @name)) @definition.module
(method name: (_) @name) @definition.function
(singleton_method name: (_) @name) @definition.method
(program (assignment left: (constant) @name) @definition.constant)

(call
  method: (identifier) @_fn (#any-of? @_fn "describe" "context" "it" "specify")
  arguments: (argument_list . [(string) (constant) (scope_resolution)] @name)
  block: [(do_block) (block)]) @definition.test

(call method: (identifier) @_m (#not-eq? @_m "new")) @reference.call @callee
(call receiver: (_) @callee method: (identifier) @_n (#eq? @_n "new")) @reference.new

(class superclass: (superclass [(constant) (scope_resolution)] @inherit))
(class body: (body_statement (call method: (identifier) @_i (#any-of? @_i "include" "prepend")
  arguments: (argument_list [(constant) (scope_resolution)] @inherit))))
(module body: (body_statement (call method: (identifier) @_i (#any-of? @_i "include" "prepend")
  arguments: (argument_list [(constant) (scope_resolution)] @inherit))))

(call !receiver method: (identifier) @_r (#any-of? @_r "require" "require_relative")) @import
